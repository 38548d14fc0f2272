#include "connection.hpp"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/un.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <openssl/err.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <vector>

#include "io/callback_thread.hpp"
#include "io/fork_guard.hpp"
#include "metrics/call_metrics.hpp"
#include "resp.hpp"
#include "tls.hpp"

namespace ratewarden {
namespace {

constexpr const char kAsking[] = "*1\r\n$6\r\nASKING\r\n";
// A write buffer that grew past this (a burst, or the scripts' bodies sent again after a restart answered NOSCRIPT)
// is given back once sent: an idle connection keeps at most this much.
constexpr size_t kKeptOutBytes = 64 * 1024;
constexpr int64_t kIdleCheckUs = 1000;  // idle this long, a connection is checked before a request is written on it

bool is_error_reply(const redisReply* reply, const char* prefix) {
  return reply != nullptr && reply->type == REDIS_REPLY_ERROR &&
         std::strncmp(reply->str, prefix, std::strlen(prefix)) == 0;
}

// An IP literal, without a name lookup.
bool numeric_address(const std::string& host, int port, sockaddr_storage& out, socklen_t& length) {
  std::memset(&out, 0, sizeof out);
  auto* v4 = reinterpret_cast<sockaddr_in*>(&out);
  if (inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(static_cast<uint16_t>(port));
    length = sizeof(sockaddr_in);
    return true;
  }
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&out);
  if (inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(static_cast<uint16_t>(port));
    length = sizeof(sockaddr_in6);
    return true;
  }
  return false;
}

}  // namespace

RedisConnection::RedisConnection(IoLoop& loop, const RedisEndpoint& endpoint, ConnectionListener& listener)
    : loop_(loop), endpoint_(endpoint), listener_(listener) {}

RedisConnection::~RedisConnection() {
  *alive_ = false;
  drop_socket();
  if (dirty_) loop_.unmark_dirty(this);  // only a connection that was used (on the I/O thread) can be dirty
}

void RedisConnection::send(RedisRequest* request) {
  // An idle pooled connection may have been closed by its server (a restart, a failover, an idle timeout) since it
  // last answered: found out now, before the request is written, it goes on a fresh connection. Once written, a
  // request whose connection dies is never sent again: the server may have run it. A connection that answered
  // within the last millisecond is taken as alive: back-to-back calls pay no extra system call.
  if (state_ == State::ready && waiting_.empty() && loop_.now_us() - read_us_ >= kIdleCheckUs && peer_gone())
    fail_all(ErrorCode::store_unavailable, endpoint_.name + ": the server closed the connection");
  if (state_ == State::ready) {
    append(request);
    return;
  }
  queued_.push_back(request);
  if (state_ == State::closed) start_connect();
}

// The wire form of a request: its command, or EVAL with the script's body (after NOSCRIPT, or after ASKING, where a
// NOSCRIPT retry would arrive without the ASKING).
void RedisConnection::append(RedisRequest* request) {
  if (waiting_.empty()) heard_us_ = loop_.now_us();  // nothing was due: the server's silence starts now
  request->wire_at = flushed_ + out_.size();
  if (request->asking) {
    out_ += kAsking;
    waiting_.push_back(nullptr);
  }
  if ((request->as_eval || request->asking) && request->script != nullptr) {
    out_ += "*" + std::to_string(request->argc) + "\r\n$4\r\nEVAL\r\n$" + std::to_string(request->script->size()) +
            "\r\n";
    out_ += *request->script;
    out_ += "\r\n";
    out_.append(request->command, request->args_offset, std::string::npos);
  } else {
    out_ += request->command;
  }
  request->written = true;
  waiting_.push_back(request);
  if (!dirty_) {
    dirty_ = true;
    loop_.mark_dirty(this);
  }
}

void RedisConnection::flush() {
  dirty_ = false;
  if (state_ == State::ready || state_ == State::handshake) write_out();
}

void RedisConnection::start_connect() {
  const uint64_t attempt = ++attempt_;
  connect_deadline_us_ = loop_.now_us() + endpoint_.connect_timeout_us;
  sockaddr_storage address;
  socklen_t length = 0;
  if (!endpoint_.unix_path.empty()) {
    auto* un = reinterpret_cast<sockaddr_un*>(&address);
    std::memset(un, 0, sizeof *un);
    un->sun_family = AF_UNIX;
    if (endpoint_.unix_path.size() >= sizeof un->sun_path) {
      fail_all(ErrorCode::store_unavailable, endpoint_.name + ": the socket path is too long");
      return;
    }
    std::memcpy(un->sun_path, endpoint_.unix_path.c_str(), endpoint_.unix_path.size() + 1);
    connect_to(address, sizeof(sockaddr_un));
    return;
  }
  if (numeric_address(endpoint_.host, endpoint_.port, address, length)) {
    connect_to(address, length);
    return;
  }
  // A name lookup can take seconds: it runs on the callback thread, never on the I/O thread.
  state_ = State::resolving;
  std::string host = endpoint_.host;
  const int port = endpoint_.port;
  std::shared_ptr<bool> alive = alive_;
  IoLoop* loop = &loop_;
  run_on_callback_thread([this, host, port, alive, loop, attempt] {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    const int rc = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
    sockaddr_storage address{};
    socklen_t length = 0;
    std::string error = rc == 0 ? "" : gai_strerror(rc);
    if (rc == 0) {
      std::memcpy(&address, found->ai_addr, found->ai_addrlen);
      length = found->ai_addrlen;
      freeaddrinfo(found);
    }
    loop->post([this, alive, attempt, address, length, error] {
      if (!*alive || attempt != attempt_ || state_ != State::resolving) return;
      if (!error.empty()) {
        fail_all(ErrorCode::store_unavailable, endpoint_.name + ": cannot connect (" + error + ")");
        return;
      }
      connect_to(address, length);
    });
  });
}

void RedisConnection::connect_to(const sockaddr_storage& address, socklen_t length) {
  fd_ = ::socket(address.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd_ < 0) {
    fail_all(ErrorCode::store_unavailable, endpoint_.name + ": cannot connect (" + std::strerror(errno) + ")");
    return;
  }
  register_inherited_fd(fd_);
  if (address.ss_family != AF_UNIX) {
    const int one = 1;
    setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  reader_ = redisReaderCreate();
  state_ = State::connecting;
  if (::connect(fd_, reinterpret_cast<const sockaddr*>(&address), length) != 0 && errno != EINPROGRESS) {
    fail_all(ErrorCode::store_unavailable, endpoint_.name + ": cannot connect (" + std::strerror(errno) + ")");
    return;
  }
  watched_ = EPOLLOUT;
  loop_.watch(fd_, watched_, this);
}

void RedisConnection::on_connected() {
  if (endpoint_.tls == nullptr) {
    start_handshake();
    return;
  }
  std::string error;
  ssl_ = endpoint_.tls->open(fd_, endpoint_.host, error);
  if (ssl_ == nullptr) {
    fail_all(ErrorCode::store_unavailable, endpoint_.name + ": TLS: " + error);
    return;
  }
  state_ = State::tls_handshake;
  continue_tls_handshake();
}

void RedisConnection::continue_tls_handshake() {
  ERR_clear_error();
  const int rc = SSL_connect(ssl_);
  if (rc == 1) {
    start_handshake();
    return;
  }
  const int err = SSL_get_error(ssl_, rc);
  if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
    tls_wants_write_ = err == SSL_ERROR_WANT_WRITE;
    update_interest();
    return;
  }
  std::string reason = tls_error("handshake failed");
  const long verify = SSL_get_verify_result(ssl_);
  if (verify != X509_V_OK) reason += std::string(": ") + X509_verify_cert_error_string(verify);
  fail_all(ErrorCode::store_unavailable, endpoint_.name + ": TLS handshake failed (" + reason + ")");
}

// AUTH and SELECT, written first; requests wait for their replies.
void RedisConnection::start_handshake() {
  state_ = State::handshake;
  handshake_replies_ = 0;
  if (endpoint_.password) {
    RespWriter w(out_, endpoint_.user.empty() ? 2 : 3);
    w.arg("AUTH");
    if (!endpoint_.user.empty()) w.arg(endpoint_.user);
    w.arg(*endpoint_.password);
    ++handshake_replies_;
  }
  if (endpoint_.db != 0) {
    RespWriter(out_, 2).arg("SELECT").arg(static_cast<int64_t>(endpoint_.db));
    ++handshake_replies_;
  }
  if (handshake_replies_ == 0) {
    on_ready();
    return;
  }
  write_out();
}

void RedisConnection::on_handshake_reply(redisReply* reply) {
  const bool is_auth = endpoint_.password && handshake_replies_ == (endpoint_.db != 0 ? 2 : 1);
  if (reply->type == REDIS_REPLY_ERROR) {
    // Redis's own text ("WRONGPASS ...", "ERR DB index is out of range") never contains the password.
    const std::string message = endpoint_.name + ": " + (is_auth ? "authentication failed: " : "") + reply->str;
    freeReplyObject(reply);
    fail_all(ErrorCode::store_error, message);
    return;
  }
  freeReplyObject(reply);
  if (--handshake_replies_ == 0) on_ready();
}

void RedisConnection::on_ready() {
  state_ = State::ready;
  if (endpoint_.metrics && !counted_) endpoint_.metrics->connection_opened();
  counted_ = true;
  std::deque<RedisRequest*> queued;
  queued.swap(queued_);
  for (RedisRequest* r : queued) append(r);
  update_interest();
}

void RedisConnection::on_io(uint32_t events) {
  if (fd_ < 0) return;  // closed earlier in this turn
  switch (state_) {
    case State::connecting: {
      int err = 0;
      socklen_t len = sizeof err;
      if (getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
      if (err != 0) {
        fail_all(ErrorCode::store_unavailable, endpoint_.name + ": cannot connect (" + std::strerror(err) + ")");
        return;
      }
      if ((events & (EPOLLOUT | EPOLLERR | EPOLLHUP)) == 0) return;
      on_connected();
      return;
    }
    case State::tls_handshake:
      continue_tls_handshake();
      return;
    case State::handshake:
    case State::ready:
      if (events & EPOLLOUT) write_out();
      if (fd_ >= 0 && (events & (EPOLLIN | EPOLLERR | EPOLLHUP))) read_replies();
      return;
    case State::closed:
    case State::resolving:
      return;
  }
}

ssize_t RedisConnection::raw_read(char* buf, size_t len, bool& again) {
  again = false;
  if (ssl_ == nullptr) {
    ssize_t n = ::recv(fd_, buf, len, 0);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) again = true;
    return n;
  }
  ERR_clear_error();
  const int n = SSL_read(ssl_, buf, static_cast<int>(std::min<size_t>(len, INT_MAX)));
  if (n > 0) return n;
  const int err = SSL_get_error(ssl_, n);
  if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
    tls_wants_write_ = err == SSL_ERROR_WANT_WRITE;
    again = true;
    return -1;
  }
  if (err == SSL_ERROR_ZERO_RETURN) return 0;
  errno = ECONNRESET;
  return -1;
}

ssize_t RedisConnection::raw_write(const char* buf, size_t len, bool& again) {
  again = false;
  if (ssl_ == nullptr) {
    // MSG_NOSIGNAL: a closed peer is an error to report, not a SIGPIPE that kills the process.
    ssize_t n = ::send(fd_, buf, len, MSG_NOSIGNAL);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) again = true;
    return n;
  }
  ERR_clear_error();
  const int n = SSL_write(ssl_, buf, static_cast<int>(std::min<size_t>(len, INT_MAX)));
  if (n > 0) {
    tls_wants_write_ = false;
    return n;
  }
  const int err = SSL_get_error(ssl_, n);
  if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
    tls_wants_write_ = err == SSL_ERROR_WANT_WRITE;
    again = true;
    return -1;
  }
  errno = ECONNRESET;
  return -1;
}

void RedisConnection::write_out() {
  while (out_sent_ < out_.size()) {
    bool again;
    const ssize_t n = raw_write(out_.data() + out_sent_, out_.size() - out_sent_, again);
    if (n > 0) {
      out_sent_ += static_cast<size_t>(n);
      continue;
    }
    if (again) break;
    fail_all(ErrorCode::store_unavailable, endpoint_.name + ": " + std::strerror(errno));
    return;
  }
  if (out_sent_ == out_.size()) {
    flushed_ += out_.size();
    out_.clear();
    if (out_.capacity() > kKeptOutBytes) out_.shrink_to_fit();
    out_sent_ = 0;
  }
  update_interest();
}

// Whether the server closed or reset the connection (an idle one: nothing is due). A byte waiting to be read is not
// proof of death (TLS may send records of its own); the read then sorts it out.
bool RedisConnection::peer_gone() {
  char byte;
  const ssize_t n = ::recv(fd_, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

void RedisConnection::read_replies() {
  char buf[16384];
  while (true) {
    bool again;
    const ssize_t n = raw_read(buf, sizeof buf, again);
    if (n < 0 && again) break;
    if (n <= 0) {
      fail_all(ErrorCode::store_unavailable,
               endpoint_.name + ": " + (n == 0 ? "the server closed the connection" : std::strerror(errno)));
      return;
    }
    heard_us_ = read_us_ = loop_.now_us();
    redisReaderFeed(reader_, buf, static_cast<size_t>(n));
    if (static_cast<size_t>(n) < sizeof buf && (ssl_ == nullptr || SSL_pending(ssl_) == 0)) break;
  }
  while (fd_ >= 0) {
    void* reply = nullptr;
    if (redisReaderGetReply(reader_, &reply) != REDIS_OK) {
      fail_all(ErrorCode::store_error, endpoint_.name + ": protocol error (" + reader_->errstr + ")");
      return;
    }
    if (reply == nullptr) break;
    auto* r = static_cast<redisReply*>(reply);
    if (state_ == State::handshake) {
      on_handshake_reply(r);
      continue;
    }
    if (waiting_.empty()) {  // a reply nobody asked for: a message to a subscriber, or a stream gone wrong
      if (listener_.on_push(r)) continue;
      freeReplyObject(r);
      fail_all(ErrorCode::store_error, endpoint_.name + ": unexpected reply");
      return;
    }
    RedisRequest* request = waiting_.front();
    waiting_.pop_front();
    if (request == nullptr) {  // ASKING's +OK
      freeReplyObject(r);
      continue;
    }
    // NOSCRIPT: the server lost its script cache (restart, failover, SCRIPT FLUSH). EVAL sends the body, which
    // also caches it again for the next EVALSHA.
    if (request->script != nullptr && !request->as_eval && is_error_reply(r, "NOSCRIPT")) {
      freeReplyObject(r);
      request->as_eval = true;
      append(request);
      continue;
    }
    request->reply.reset(r);
    request->error_message.clear();
    listener_.on_reply(request);
  }
  if (fd_ >= 0) update_interest();
}

void RedisConnection::update_interest() {
  if (fd_ < 0) return;
  uint32_t events = EPOLLIN;
  if (state_ == State::connecting || out_sent_ < out_.size() || tls_wants_write_) events |= EPOLLOUT;
  if (events == watched_) return;  // unchanged, as after nearly every write and read: no epoll_ctl
  watched_ = events;
  loop_.watch(fd_, events, this);
}

int64_t RedisConnection::next_deadline_us() const {
  int64_t next = INT64_MAX;
  for (RedisRequest* r : waiting_) {
    if (r != nullptr) {
      next = r->deadline_us;
      break;
    }
  }
  if (!waiting_.empty()) next = std::min(next, heard_us_ + endpoint_.timeout_us);
  if (!queued_.empty()) next = std::min(next, queued_.front()->deadline_us);
  if (state_ != State::closed && state_ != State::ready && state_ != State::handshake)
    next = std::min(next, connect_deadline_us_);
  return next;
}

void RedisConnection::expire(int64_t now_us) {
  if (state_ != State::closed && state_ != State::ready && state_ != State::handshake &&
      connect_deadline_us_ <= now_us) {
    fail_all(ErrorCode::store_timeout, endpoint_.name + ": cannot connect (timed out)");
    return;
  }
  // A server that has said nothing for a whole timeout while requests were due is stuck: the connection goes, and
  // with it every request on it (a late reply must never be matched to another request).
  if (!waiting_.empty() && heard_us_ + endpoint_.timeout_us <= now_us) {
    fail_all(ErrorCode::store_timeout, endpoint_.name + ": no reply within the timeout");
    return;
  }
  // A server that answers, but too slowly for some calls (others' calls queued before them): those calls fail with
  // a timeout; the connection stays, and drops their replies when they come.
  // Told after the scan: a callback may send a new request on this very connection.
  std::vector<RedisRequest*> late;
  bool silent = false;
  for (RedisRequest*& r : waiting_) {
    if (r == nullptr) continue;
    if (r->deadline_us > now_us) break;
    // Nothing at all came back since this call was made: the server is silent, not busy.
    if (read_us_ < r->deadline_us - endpoint_.timeout_us) {
      silent = true;
      break;
    }
    late.push_back(r);
    r = nullptr;
  }
  for (RedisRequest* r : late) {
    r->fail(ErrorCode::store_timeout, endpoint_.name + ": no reply within the timeout (the server is busy)");
    listener_.on_failure(r, false, false);
  }
  if (silent) fail_all(ErrorCode::store_timeout, endpoint_.name + ": no reply within the timeout");
  // Not sent yet (still connecting): only the ones out of time fail.
  while (!queued_.empty() && queued_.front()->deadline_us <= now_us) {
    RedisRequest* r = queued_.front();
    queued_.pop_front();
    r->fail(ErrorCode::store_timeout, endpoint_.name + ": cannot connect within the timeout");
    listener_.on_failure(r, false, false);
  }
}

void RedisConnection::drop_socket() {
  if (fd_ >= 0) {
    loop_.unwatch(fd_);
    watched_ = 0;
    unregister_inherited_fd(fd_);
    ::close(fd_);  // no TLS close_notify, no QUIT: the connection is gone, not closed politely
    fd_ = -1;
  }
  if (ssl_ != nullptr) SSL_free(ssl_);
  ssl_ = nullptr;
  tls_wants_write_ = false;
  if (reader_ != nullptr) redisReaderFree(reader_);
  reader_ = nullptr;
  out_.clear();
  out_sent_ = 0;
  flushed_ = 0;
  state_ = State::closed;
  if (counted_ && endpoint_.metrics) endpoint_.metrics->connection_closed();
  counted_ = false;
}

void RedisConnection::fail_all(ErrorCode code, const std::string& message) {
  const uint64_t written = flushed_ + out_sent_;  // bytes of the output that reached the socket
  drop_socket();
  ++attempt_;
  std::deque<RedisRequest*> waiting, queued;
  waiting.swap(waiting_);
  queued.swap(queued_);
  // The listener may send requests again, to this very connection: it starts afresh.
  for (RedisRequest* r : waiting) {
    if (r == nullptr) continue;
    r->fail(code, message);
    listener_.on_failure(r, true, r->wire_at >= written);
  }
  for (RedisRequest* r : queued) {  // the connection never got ready: a fresh one would meet the same
    r->fail(code, message);
    listener_.on_failure(r, true, false);
  }
  listener_.on_dropped();
}

}  // namespace ratewarden
