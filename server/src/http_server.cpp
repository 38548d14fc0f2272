#include "http_server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace ratewarden::server {
namespace {

constexpr size_t kMaxHeaderBytes = 16 * 1024;
constexpr size_t kMaxConnections = 1024;
constexpr int64_t kIdleUs = 60 * 1000000LL;
constexpr int64_t kLingerUs = 2 * 1000000LL;
constexpr int64_t kHandshakeUs = kHandshakeTimeoutMs * 1000LL;
constexpr uint64_t kListenTag = 0, kWakeTag = 1;  // epoll data of the listener and the eventfd; connections: id + 1

int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

const char* reason(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 411: return "Length Required";
    case 413: return "Payload Too Large";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    default: return status >= 500 ? "Internal Server Error" : "Error";
  }
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Where the body of the request at the head of `in` starts (just past its header's empty line), or npos while the
// header is incomplete. Lines end in CRLF or a bare LF (RFC 9112 §2.2 lets a server take either).
size_t body_start(const std::string& in) {
  for (size_t lf = in.find('\n'); lf != std::string::npos; lf = in.find('\n', lf + 1)) {
    if (lf + 1 < in.size() && in[lf + 1] == '\n') return lf + 2;
    if (lf + 2 < in.size() && in[lf + 1] == '\r' && in[lf + 2] == '\n') return lf + 3;
  }
  return std::string::npos;
}

bool all_digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

int listen_on(const std::string& flag, const std::string& listen, int& port) {
  const size_t colon = listen.rfind(':');
  if (colon == std::string::npos) throw std::runtime_error(flag + " takes ADDR:PORT, got \"" + listen + "\"");
  std::string host = listen.substr(0, colon);
  const int wanted = std::atoi(listen.c_str() + colon + 1);
  sockaddr_storage address{};
  socklen_t length = 0;
  if (host.size() > 1 && host.front() == '[' && host.back() == ']') {
    auto* a6 = reinterpret_cast<sockaddr_in6*>(&address);
    a6->sin6_family = AF_INET6;
    a6->sin6_port = htons(static_cast<uint16_t>(wanted));
    if (inet_pton(AF_INET6, host.substr(1, host.size() - 2).c_str(), &a6->sin6_addr) != 1) length = 0;
    else length = sizeof(sockaddr_in6);
  } else {
    auto* a4 = reinterpret_cast<sockaddr_in*>(&address);
    a4->sin_family = AF_INET;
    a4->sin_port = htons(static_cast<uint16_t>(wanted));
    if (inet_pton(AF_INET, host.c_str(), &a4->sin_addr) == 1) length = sizeof(sockaddr_in);
  }
  if (length == 0 || wanted < 0 || wanted > 65535)
    throw std::runtime_error(flag + ": not an IP address and port: \"" + listen + "\"");
  const int fd = ::socket(address.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&address), length) != 0 || ::listen(fd, 512) != 0) {
    const std::string why = std::strerror(errno);
    if (fd >= 0) ::close(fd);
    throw std::runtime_error("cannot listen on " + listen + " (" + flag + "): " + why);
  }
  getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  port = ntohs(address.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&address)->sin6_port
                                              : reinterpret_cast<sockaddr_in*>(&address)->sin_port);
  return fd;
}

}  // namespace

struct HttpServer::Mailbox {
  ~Mailbox() { ::close(wake_fd); }
  void post(uint64_t id, HttpReply reply) {
    {
      std::lock_guard<std::mutex> lock(mu);
      replies.emplace_back(id, std::move(reply));
    }
    wake();
  }
  void wake() const {
    const uint64_t one = 1;
    (void)!::write(wake_fd, &one, sizeof one);
  }
  std::deque<std::pair<uint64_t, HttpReply>> take() {
    std::deque<std::pair<uint64_t, HttpReply>> ready;
    std::lock_guard<std::mutex> lock(mu);
    ready.swap(replies);
    return ready;
  }

  const int wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);  // replies ready, or stop, or drain
  std::mutex mu;
  std::deque<std::pair<uint64_t, HttpReply>> replies;
};

struct HttpServer::Connection {
  ~Connection() { SSL_free(ssl); }
  // One read or write, plain or TLS: > 0 bytes; 0: the peer closed; -1 with errno (EAGAIN: not now).
  ssize_t receive(char* buf, size_t n);
  ssize_t transmit(const char* buf, size_t n);

  int fd = -1;
  uint64_t id = 0;
  std::string in, out;
  size_t sent = 0;
  bool busy = false;        // a request is being answered: the next one (pipelined) waits
  bool head = false;        // the request answered is a HEAD: its answer has no body
  bool continued = false;   // "100 Continue" sent for the request at the head of `in`, whose body is coming
  bool keep_alive = true;
  bool peer_done = false;  // the client closed its side
  bool lingering = false;  // answered and shut for writing: what the client still sends is read and dropped, so
                           // that closing does not reset the connection under the answer it has not read yet
  bool out_blocked = false;  // the last write (or handshake step) waits for the socket to be writable
  uint32_t events = EPOLLIN;  // epoll's interest, as last set
  int64_t active_us = 0;
  // TLS
  SSL* ssl = nullptr;
  bool handshaking = false;
  bool read_wants_write = false;  // the last SSL_read waits for the socket to be writable
  bool write_wants_read = false;  // the last SSL_write waits for the peer's bytes
  int64_t opened_us = 0;
};

ssize_t HttpServer::Connection::receive(char* buf, size_t n) {
  if (ssl == nullptr) return ::read(fd, buf, n);
  read_wants_write = false;
  ERR_clear_error();  // SSL_get_error reads the thread's queue: nothing of an earlier call may stay in it
  const int got = SSL_read(ssl, buf, static_cast<int>(n));
  if (got > 0) return got;
  switch (SSL_get_error(ssl, got)) {
    case SSL_ERROR_ZERO_RETURN: return 0;  // close_notify, or the bare end of the stream (SSL_OP_IGNORE_UNEXPECTED_EOF)
    case SSL_ERROR_WANT_WRITE: read_wants_write = true; [[fallthrough]];
    case SSL_ERROR_WANT_READ: errno = EAGAIN; return -1;
    default: ERR_clear_error(); errno = ECONNRESET; return -1;
  }
}

ssize_t HttpServer::Connection::transmit(const char* buf, size_t n) {
  if (ssl == nullptr) return ::send(fd, buf, n, MSG_NOSIGNAL);
  write_wants_read = false;
  ERR_clear_error();
  const int put = SSL_write(ssl, buf, static_cast<int>(std::min<size_t>(n, 1 << 30)));
  if (put > 0) return put;
  switch (SSL_get_error(ssl, put)) {
    case SSL_ERROR_WANT_READ: write_wants_read = true; errno = EAGAIN; return -1;
    case SSL_ERROR_WANT_WRITE: errno = EAGAIN; return -1;
    default: ERR_clear_error(); errno = ECONNRESET; return -1;
  }
}

HttpServer::HttpServer(const std::string& listen, HttpRoute route, size_t max_body_bytes, SslContext tls,
                       const std::string& flag)
    : route_(std::move(route)), max_body_bytes_(max_body_bytes), tls_(std::move(tls)),
      mailbox_(std::make_shared<Mailbox>()) {
  listen_fd_ = listen_on(flag, listen, port_);
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  epoll_event e{};
  e.events = EPOLLIN;
  e.data.u64 = kListenTag;
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listen_fd_, &e);
  e.data.u64 = kWakeTag;
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, mailbox_->wake_fd, &e);
  thread_ = std::thread([this] { run(); });
}

HttpServer::~HttpServer() {
  stopping_.store(true);
  mailbox_->wake();
  thread_.join();
  for (auto& [id, c] : connections_) ::close(c->fd);
  if (listen_fd_ >= 0) ::close(listen_fd_);
  ::close(epoll_fd_);
}

void HttpServer::drain() {
  draining_.store(true);
  mailbox_->wake();
}

bool HttpServer::wait_drained(std::chrono::system_clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(drained_mu_);
  return drained_cv_.wait_until(lock, deadline, [this] { return drained_; });
}

void HttpServer::drain_step() {
  if (listen_fd_ >= 0) {
    epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, listen_fd_, nullptr);
    ::close(listen_fd_);  // a connection not accepted yet is refused
    listen_fd_ = -1;
  }
  std::vector<uint64_t> idle;
  for (const auto& [id, c] : connections_)
    if (!c->busy && c->out.empty()) idle.push_back(id);
  for (uint64_t id : idle) close(id);
  if (!connections_.empty()) return;
  std::lock_guard<std::mutex> lock(drained_mu_);
  drained_ = true;
  drained_cv_.notify_all();
}

void HttpServer::run() {
  // OpenSSL writes with write(), not send(MSG_NOSIGNAL): a client gone mid-answer must be an EPIPE, not a SIGPIPE
  // that ends the process. Blocked in this thread, the signal stays pending here, harmlessly.
  sigset_t pipe;
  sigemptyset(&pipe);
  sigaddset(&pipe, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
  epoll_event events[64];
  while (!stopping_.load()) {
    const int n = epoll_wait(epoll_fd_, events, 64, 1000);
    for (int i = 0; i < n; ++i) {
      const uint64_t tag = events[i].data.u64;
      if (tag == kListenTag) {
        accept_all();
      } else if (tag == kWakeTag) {
        uint64_t count;
        (void)!::read(mailbox_->wake_fd, &count, sizeof count);
        take_replies();
      } else {
        auto it = connections_.find(tag - 2);
        if (it != connections_.end()) on_event(*it->second, events[i].events);
      }
    }
    expire_idle();
    if (draining_.load()) drain_step();
  }
}

void HttpServer::accept_all() {
  while (true) {
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;
    if (connections_.size() >= kMaxConnections) {
      ::close(fd);
      continue;
    }
    const int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    auto c = std::make_unique<Connection>();
    c->fd = fd;
    c->id = next_id_++;
    c->active_us = c->opened_us = now_us();
    if (const SslContext tls = std::atomic_load(&tls_)) {
      c->ssl = SSL_new(tls.get());  // holds its own reference to the context
      if (c->ssl == nullptr || SSL_set_fd(c->ssl, fd) != 1) {
        ERR_clear_error();
        ::close(fd);
        continue;
      }
      SSL_set_accept_state(c->ssl);
      c->handshaking = true;
    }
    epoll_event e{};
    e.events = EPOLLIN;
    e.data.u64 = c->id + 2;
    epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &e);
    connections_.emplace(c->id, std::move(c));
  }
}

void HttpServer::on_event(Connection& c, uint32_t events) {
  const uint64_t id = c.id;
  if (events & (EPOLLERR | EPOLLHUP)) return close(id);
  if (c.lingering) return on_readable(c);
  if (c.handshaking) return handshake(c);
  // TLS may need the other direction: a write that waits for the peer's bytes, a read that waits to write.
  if ((events & EPOLLOUT) || c.write_wants_read) flush(c);  // may close the connection
  auto it = connections_.find(id);
  if (it != connections_.end() && ((events & EPOLLIN) || it->second->read_wants_write)) on_readable(*it->second);
}

// One step of a TLS handshake; a failed one (a plaintext client, a client certificate refused) closes the connection.
void HttpServer::handshake(Connection& c) {
  ERR_clear_error();
  const int done = SSL_do_handshake(c.ssl);
  if (done == 1) {
    c.handshaking = false;
    c.out_blocked = false;
    watch(c);
    return on_readable(c);  // the request may have come with the handshake's last bytes
  }
  switch (SSL_get_error(c.ssl, done)) {
    case SSL_ERROR_WANT_READ: c.out_blocked = false; break;
    case SSL_ERROR_WANT_WRITE: c.out_blocked = true; break;
    default: ERR_clear_error(); return close(c.id);
  }
  watch(c);
}

void HttpServer::on_readable(Connection& c) {
  char buf[16384];
  if (c.lingering) {  // the bytes are dropped unread: plain or TLS alike
    ssize_t n;
    while ((n = ::read(c.fd, buf, sizeof buf)) > 0) {
    }
    if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) close(c.id);
    return;
  }
  while (true) {
    const ssize_t n = c.receive(buf, sizeof buf);
    if (n > 0) {
      c.in.append(buf, static_cast<size_t>(n));
      if (c.in.size() > kMaxHeaderBytes + max_body_bytes_) break;  // answered 413 or 431 below
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    if (n < 0) return close(c.id);
    // The client is done sending (a half-close): answer every request it sent, then close.
    c.peer_done = true;
    break;
  }
  c.active_us = now_us();
  watch(c);
  const uint64_t id = c.id;
  if (!c.busy) serve(c);  // may close the connection: `c` is not touched after it
  auto it = connections_.find(id);
  if (it != connections_.end() && it->second->peer_done && !it->second->busy && it->second->out.empty()) close(id);
}

// Answers the request at the head of `c.in`, if it is whole.
void HttpServer::serve(Connection& c) {
  const size_t start = body_start(c.in);
  auto refuse = [this, &c](int status, const std::string& why) {
    c.keep_alive = false;
    c.in.clear();
    c.continued = false;
    c.busy = true;
    send(c.id, HttpReply{status, "text/plain; charset=utf-8", why + "\n"});
  };
  c.head = false;
  if ((start == std::string::npos ? c.in.size() : start) > kMaxHeaderBytes)
    return refuse(431, "the request's header is over 16 KiB");
  if (start == std::string::npos) return;
  HttpRequest request;
  std::istringstream head(c.in.substr(0, start));
  std::string line, version;
  std::getline(head, line);
  std::istringstream first(line);
  first >> request.method >> request.path >> version;
  if (version.rfind("HTTP/1.", 0) != 0) return refuse(400, "not an HTTP/1.x request");
  c.head = request.method == "HEAD";
  request.path = request.path.substr(0, request.path.find('?'));
  std::optional<size_t> length;
  bool expects_continue = false;
  c.keep_alive = version != "HTTP/1.0";
  while (std::getline(head, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string name = lower(line.substr(0, colon));
    std::string value = line.substr(colon + 1);
    value.erase(0, value.find_first_not_of(" \t"));
    value.erase(value.find_last_not_of(" \t") + 1);
    if (name == "content-length") {
      // RFC 9112 §6.3: a length that is not a number, or two that differ, leave the message's end unknown.
      if (!all_digits(value)) return refuse(400, "Content-Length is not a number: \"" + value + "\"");
      if (value.size() > 18 || std::stoull(value) > max_body_bytes_)
        return refuse(413, "the body is over " + std::to_string(max_body_bytes_) + " bytes");
      const size_t v = std::stoull(value);
      if (length && *length != v) return refuse(400, "two Content-Length headers that differ");
      length = v;
    } else if (name == "transfer-encoding") {
      return refuse(411, "send the body with a Content-Length");
    } else if (name == "connection") {
      c.keep_alive = lower(value) != "close";
    } else if (name == "expect") {
      expects_continue = lower(value) == "100-continue";
    }
  }
  const size_t end = start + length.value_or(0);
  if (c.in.size() < end) {  // the body is still coming (a client that waits to be asked for it is asked, once)
    if (!expects_continue || c.continued || version == "HTTP/1.0") return;
    c.continued = true;
    c.out += "HTTP/1.1 100 Continue\r\n\r\n";
    return flush(c);
  }
  request.body = c.in.substr(start, end - start);
  c.in.erase(0, end);
  c.continued = false;
  c.busy = true;
  route_(request, [mailbox = mailbox_, id = c.id](HttpReply reply) { mailbox->post(id, std::move(reply)); });
}

void HttpServer::take_replies() {
  for (auto& [id, reply] : mailbox_->take()) send(id, reply);
}

void HttpServer::send(uint64_t id, const HttpReply& reply) {
  auto it = connections_.find(id);
  if (it == connections_.end()) return;  // the client left before its answer
  Connection& c = *it->second;
  c.busy = false;
  c.out += "HTTP/1.1 " + std::to_string(reply.status) + " " + reason(reply.status) +
           "\r\nContent-Type: " + reply.content_type + "\r\nContent-Length: " + std::to_string(reply.body.size()) +
           (last_answer(c) ? "\r\nConnection: close\r\n\r\n" : "\r\n\r\n") + (c.head ? "" : reply.body);
  flush(c);
  if (connections_.count(id) != 0 && c.keep_alive && !c.in.empty()) serve(c);  // a pipelined request
}

// Whether the connection closes once its output is sent: the listener drains, its request asked to, or the client
// has half-closed and sent no further whole request (a pipelined one is still answered, whenever the half-close was
// read).
bool HttpServer::last_answer(const Connection& c) const {
  return draining_.load() || !c.keep_alive || (c.peer_done && body_start(c.in) == std::string::npos);
}

void HttpServer::flush(Connection& c) {
  while (c.sent < c.out.size()) {
    const ssize_t n = c.transmit(c.out.data() + c.sent, c.out.size() - c.sent);
    if (n > 0) {
      c.sent += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (c.write_wants_read && c.peer_done) return close(c.id);  // the bytes it waits for will never come
      c.out_blocked = !c.write_wants_read;
      return watch(c);
    }
    return close(c.id);
  }
  c.out.clear();
  c.sent = 0;
  c.out_blocked = false;
  watch(c);
  if (c.busy || c.continued || !last_answer(c)) return;
  if (c.peer_done) return close(c.id);
  if (c.ssl != nullptr) SSL_shutdown(c.ssl);  // close_notify, as far as it goes without waiting
  ERR_clear_error();
  ::shutdown(c.fd, SHUT_WR);
  c.lingering = true;
  c.active_us = now_us();
  watch(c);
}

void HttpServer::watch(Connection& c) {
  uint32_t events = c.peer_done ? 0u : uint32_t{EPOLLIN};
  if (!c.lingering && (c.out_blocked || c.read_wants_write)) events |= EPOLLOUT;
  if (events == c.events) return;
  epoll_event e{};
  e.events = events;
  e.data.u64 = c.id + 2;
  epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, c.fd, &e);
  c.events = events;
}

void HttpServer::close(uint64_t id) {
  auto it = connections_.find(id);
  if (it == connections_.end()) return;
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, it->second->fd, nullptr);
  ::close(it->second->fd);
  connections_.erase(it);
}

void HttpServer::expire_idle() {
  const int64_t now = now_us();
  std::vector<uint64_t> idle;
  for (const auto& [id, c] : connections_)
    if (c->handshaking ? now - c->opened_us > kHandshakeUs
                       : !c->busy && c->out.empty() && now - c->active_us > (c->lingering ? kLingerUs : kIdleUs))
      idle.push_back(id);
  for (uint64_t id : idle) close(id);
}

}  // namespace ratewarden::server
