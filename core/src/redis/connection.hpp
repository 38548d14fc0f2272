// One pipelined, non-blocking connection to a Redis server, driven by the I/O loop (internal).
//
// Requests queued during one turn of the loop leave in one write; replies are matched to requests in order. The
// connection (re)connects on demand: TCP or a Unix socket, TLS when the endpoint has a context, then AUTH and
// SELECT (answered before any request is sent, so a failed SELECT can never let a script run on database 0).
// Everything here runs on the loop thread.
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <string>

#include <hiredis/read.h>
#include <openssl/ssl.h>

#include "endpoint.hpp"
#include "io/io_loop.hpp"
#include "request.hpp"

namespace ratewarden {

// Where a connection hands its requests when they are done.
class ConnectionListener {
 public:
  virtual ~ConnectionListener() = default;
  virtual void on_reply(RedisRequest* request) = 0;
  // `server_failed`: the server refused, cut or stopped answering the connection (not a call that ran out of time
  // behind others). `unsent`: not one byte of the request was written to the socket, so the server cannot have run
  // it: it may go again on a fresh connection without being applied twice.
  virtual void on_failure(RedisRequest* request, bool server_failed, bool unsent) = 0;
  // A reply with no request waiting for it: a pub/sub message. A listener that subscribes takes it (and frees it)
  // and returns true; otherwise the stream cannot be trusted and the connection fails.
  virtual bool on_push(redisReply*) { return false; }
  // The connection was dropped (after its requests were told).
  virtual void on_dropped() {}
};

class RedisConnection final : public IoHandler, public Flushable {
 public:
  RedisConnection(IoLoop& loop, const RedisEndpoint& endpoint, ConnectionListener& listener);
  ~RedisConnection() override;
  RedisConnection(const RedisConnection&) = delete;
  RedisConnection& operator=(const RedisConnection&) = delete;

  // Queues the request; it leaves at the end of the loop's turn (connecting first if needed).
  void send(RedisRequest* request);
  // Requests sent or queued and not yet answered.
  size_t in_flight() const { return waiting_.size() + queued_.size(); }
  int64_t next_deadline_us() const;
  void expire(int64_t now_us);
  // Fails every request with `message` and closes the socket without writing to it: the server failed.
  void fail_all(ErrorCode code, const std::string& message);

  void on_io(uint32_t events) override;
  void flush() override;

 private:
  enum class State { closed, resolving, connecting, tls_handshake, handshake, ready };

  void start_connect();
  void connect_to(const sockaddr_storage& address, socklen_t length);
  void on_connected();
  void continue_tls_handshake();
  void start_handshake();
  void on_handshake_reply(redisReply* reply);
  void on_ready();
  void append(RedisRequest* request);
  void read_replies();
  void write_out();
  void update_interest();
  ssize_t raw_read(char* buf, size_t len, bool& again);
  ssize_t raw_write(const char* buf, size_t len, bool& again);
  void drop_socket();
  bool peer_gone();

  IoLoop& loop_;
  const RedisEndpoint& endpoint_;
  ConnectionListener& listener_;
  State state_ = State::closed;
  int fd_ = -1;
  uint32_t watched_ = 0;  // the epoll events fd_ is watched for
  SSL* ssl_ = nullptr;
  bool tls_wants_write_ = false;
  redisReader* reader_ = nullptr;
  std::string out_;
  size_t out_sent_ = 0;
  uint64_t flushed_ = 0;  // bytes written since the connection was made, and dropped from out_
  // Sent (or in out_), in order. Null stands for a reply to drop: an ASKING's, or a request's that ran out of time.
  std::deque<RedisRequest*> waiting_;
  std::deque<RedisRequest*> queued_;   // waiting for the connection to be ready
  int handshake_replies_ = 0;          // AUTH / SELECT replies still expected
  int64_t connect_deadline_us_ = 0;
  bool counted_ = false;               // counted in the store's open connections (since it was ready)
  int64_t heard_us_ = 0;               // when the server last sent something, or was last asked with nothing due
  int64_t read_us_ = 0;                // when the server last sent something
  uint64_t attempt_ = 0;               // tells a late name resolution from the current one
  bool dirty_ = false;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);  // for a name resolution that outlives this
};

}  // namespace ratewarden
