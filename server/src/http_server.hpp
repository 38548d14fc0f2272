// The server's HTTP/1.1 listener (internal): one thread, one epoll, a few routes. Bodies by Content-Length only
// (`Expect: 100-continue` answered), bounded headers and bodies, keep-alive, idle connections closed, HEAD as GET
// without the body. A route answers at once or later, from any thread (the store's answer): the reply is handed
// back to the listener's thread. With an OpenSSL context, every connection is TLS: its handshake runs in the same
// loop without blocking it, and one that does not finish within kHandshakeTimeoutMs is closed.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
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
  ~HttpServer();  // stops the thread; connections are closed, answered or not
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  int port() const { return port_; }
  // The context of the connections accepted from now on (a listener made with TLS only; any thread).
  void set_tls(SslContext tls) { std::atomic_store(&tls_, std::move(tls)); }

  // Draining (any thread): no connection is accepted any more, idle ones are closed, and each request read is still
  // answered, on a connection closed after its answer. wait_drained: until no connection is left, or `deadline`
  // (then false).
  void drain();
  bool wait_drained(std::chrono::system_clock::time_point deadline);

 private:
  struct Connection;
  struct Mailbox;
  void run();
  void drain_step();  // on the listener's thread, while draining
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
  int listen_fd_ = -1;  // -1 once draining
  int epoll_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> draining_{false};
  std::mutex drained_mu_;
  std::condition_variable drained_cv_;
  bool drained_ = false;  // draining, and no connection left
  std::map<uint64_t, std::unique_ptr<Connection>> connections_;  // by id: a late reply finds its connection gone
  uint64_t next_id_ = 1;
  // The replies' way to this thread, shared with the routes' reply callbacks: one called after the listener is gone
  // (a store that answers after the drain timeout) posts to it harmlessly.
  std::shared_ptr<Mailbox> mailbox_;
  std::thread thread_;
};

}  // namespace ratewarden::server
