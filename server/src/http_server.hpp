// The server's HTTP/1.1 listener (internal): one thread, one epoll, a few routes. Bodies by Content-Length only,
// bounded headers and bodies, keep-alive, idle connections closed. A route answers at once or later, from any thread
// (the store's answer): the reply is handed back to the listener's thread. With an OpenSSL context, every
// connection is TLS: its handshake runs in the same loop without blocking it, and one that does not finish within
// kHandshakeTimeoutMs is closed.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "tls.hpp"

namespace ratewarden::server {

struct HttpReply {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

struct HttpRequest {
  std::string method;
  std::string path;  // without the query
  std::string body;
};

// Answers a request: calls `reply` once, from any thread, now or later.
using HttpRoute = std::function<void(const HttpRequest& request, std::function<void(HttpReply)> reply)>;

class HttpServer {
 public:
  // Listens on "ADDR:PORT" (port 0: any), with TLS when `tls` is set; throws std::runtime_error naming `flag` when
  // it cannot.
  HttpServer(const std::string& listen, HttpRoute route, size_t max_body_bytes, SslContext tls = nullptr,
             const std::string& flag = "--http-listen");
  ~HttpServer();  // stops the thread; connections are closed
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  int port() const { return port_; }
  // The context of the connections accepted from now on (a listener made with TLS only; any thread).
  void set_tls(SslContext tls) { std::atomic_store(&tls_, std::move(tls)); }

 private:
  struct Connection;
  void run();
  void accept_all();
  void on_event(Connection& c, uint32_t events);
  void handshake(Connection& c);
  void on_readable(Connection& c);
  void serve(Connection& c);
  void send(uint64_t id, const HttpReply& reply);
  void flush(Connection& c);
  bool last_answer(const Connection& c) const;
  void watch(Connection& c);  // epoll's interest in the connection, from its state
  void close(uint64_t id);
  void take_replies();
  void expire_idle();

  HttpRoute route_;
  const size_t max_body_bytes_;
  SslContext tls_;  // null: plaintext
  int listen_fd_ = -1;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;  // eventfd: replies ready, or stop
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::map<uint64_t, std::unique_ptr<Connection>> connections_;  // by id: a late reply finds its connection gone
  uint64_t next_id_ = 1;
  std::mutex replies_mu_;
  std::deque<std::pair<uint64_t, HttpReply>> replies_;
  std::thread thread_;
};

}  // namespace ratewarden::server
