#include "connection.hpp"

#include <cerrno>
#include <cstring>
#include <sys/socket.h>

#include "resp.hpp"

namespace ratewarden {
namespace {

timeval to_timeval(int64_t us) {
  timeval tv;
  tv.tv_sec = static_cast<time_t>(us / 1000000);
  tv.tv_usec = static_cast<suseconds_t>(us % 1000000);
  return tv;
}

bool is_timeout(int err) { return err == EAGAIN || err == EWOULDBLOCK || err == ETIMEDOUT || err == EINPROGRESS; }

void fail(RedisRequest* r, ErrorCode code, const std::string& message) {
  r->reply.reset();
  r->error = code;
  r->error_message = message;
}

bool is_error_reply(const redisReply* reply, const char* prefix) {
  return reply != nullptr && reply->type == REDIS_REPLY_ERROR &&
         std::strncmp(reply->str, prefix, std::strlen(prefix)) == 0;
}

}  // namespace

RedisConnection::~RedisConnection() { drop_connection(); }

void RedisConnection::drop_connection() {
  if (ctx_ != nullptr) redisFree(ctx_);
  ctx_ = nullptr;
}

// Each caller sleeps on its own condition variable and is woken only when its requests are answered, or when it
// is the next to lead: no caller wakes up for someone else's batch.
void RedisConnection::execute(RedisRequest* const* requests, size_t n) {
  std::condition_variable wake;
  std::unique_lock<std::mutex> lock(mu_);
  for (size_t i = 0; i < n; ++i) {
    requests[i]->waiter = &wake;
    queue_.push_back(requests[i]);
  }
  auto all_done = [&] {
    for (size_t i = 0; i < n; ++i)
      if (!requests[i]->done) return false;
    return true;
  };
  while (!all_done()) {
    if (busy_) {
      wake.wait(lock);
      continue;
    }
    busy_ = true;
    std::vector<RedisRequest*> batch;
    batch.swap(queue_);
    lock.unlock();
    try {
      run_batch(batch);
    } catch (const std::exception& e) {
      // Never leave a caller waiting: whatever has no reply fails, and the connection starts afresh.
      for (RedisRequest* r : batch)
        if (r->reply == nullptr && r->error_message.empty())
          fail(r, ErrorCode::internal, endpoint_.name + ": " + e.what());
      drop_connection();
    }
    lock.lock();
    busy_ = false;
    // Notified under the lock: a caller cannot return (and free its condition variable) before this is done.
    for (RedisRequest* r : batch) {
      r->done = true;
      if (r->waiter != &wake) r->waiter->notify_one();
    }
    if (!queue_.empty() && queue_.front()->waiter != &wake) queue_.front()->waiter->notify_one();  // the next leader
  }
}

void RedisConnection::run_batch(const std::vector<RedisRequest*>& batch) {
  ErrorCode code;
  std::string message;
  const bool reused = ctx_ != nullptr;
  if (!reused && !connect(code, message)) {
    for (RedisRequest* r : batch) fail(r, code, message);
    return;
  }
  if (!exchange(batch, false)) {
    // A connection that sat idle may have died with its server (a restart, a failover): the requests it could not
    // answer get one more chance on a fresh connection. At worst a request the old server ran before closing runs
    // twice: it charges twice, it never admits more.
    std::vector<RedisRequest*> lost;
    for (RedisRequest* r : batch)
      if (r->reply == nullptr && r->error == ErrorCode::store_unavailable) lost.push_back(r);
    if (!reused || lost.empty()) return;
    if (!connect(code, message)) {
      for (RedisRequest* r : lost) fail(r, code, message);
      return;
    }
    if (!exchange(lost, false)) return;
  }
  // NOSCRIPT: the server lost its script cache (restart, failover, SCRIPT FLUSH). EVAL sends the body, which also
  // caches it again for the next EVALSHA.
  std::vector<RedisRequest*> retry;
  for (RedisRequest* r : batch)
    if (r->script != nullptr && is_error_reply(r->reply.get(), "NOSCRIPT")) retry.push_back(r);
  if (!retry.empty()) exchange(retry, true);
}

// Writes the batch and reads one reply per request. On an I/O error every request still waiting fails, and the
// connection is dropped: a reply that arrives later must never be matched to another request.
bool RedisConnection::exchange(const std::vector<RedisRequest*>& batch, bool as_eval) {
  std::string out;
  for (RedisRequest* r : batch) {
    if (!as_eval && !r->send_body) {
      out += r->command;
      continue;
    }
    out += "*" + std::to_string(r->argc) + "\r\n$4\r\nEVAL\r\n$" + std::to_string(r->script->size()) + "\r\n";
    out += *r->script;
    out += "\r\n";
    out.append(r->command, r->args_offset, std::string::npos);
  }
  ErrorCode code;
  std::string message;
  bool ok = send_all(out, code, message);
  for (size_t i = 0; i < batch.size(); ++i) {
    void* reply = nullptr;
    if (ok && redisGetReply(ctx_, &reply) != REDIS_OK) {
      const int err = errno;
      ok = false;
      code = ctx_->err == REDIS_ERR_PROTOCOL ? ErrorCode::store_error
             : ctx_->err == REDIS_ERR_IO && is_timeout(err) ? ErrorCode::store_timeout
                                                             : ErrorCode::store_unavailable;
      message = endpoint_.name + ": " +
                (code == ErrorCode::store_timeout ? std::string("no reply within the timeout")
                                                  : std::string(ctx_->errstr));
    }
    if (!ok) {
      fail(batch[i], code, message);
      continue;
    }
    batch[i]->reply.reset(static_cast<redisReply*>(reply));
    batch[i]->error_message.clear();
  }
  if (!ok) drop_connection();
  return ok;
}

bool RedisConnection::send_all(const std::string& data, ErrorCode& code, std::string& message) {
  size_t sent = 0;
  while (sent < data.size()) {
    // MSG_NOSIGNAL: a closed peer is an error to report, not a SIGPIPE that kills the process.
    ssize_t n = ::send(ctx_->fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n >= 0) {
      sent += static_cast<size_t>(n);
      continue;
    }
    if (errno == EINTR) continue;
    code = is_timeout(errno) ? ErrorCode::store_timeout : ErrorCode::store_unavailable;
    message = endpoint_.name + ": " + (code == ErrorCode::store_timeout ? "write timed out" : std::strerror(errno));
    return false;
  }
  return true;
}

bool RedisConnection::connect(ErrorCode& code, std::string& message) {
  redisContext* c = redisConnectWithTimeout(endpoint_.host.c_str(), endpoint_.port,
                                            to_timeval(endpoint_.connect_timeout_us));
  if (c == nullptr || c->err) {
    const bool timed_out = c != nullptr && (is_timeout(errno) || std::strstr(c->errstr, "timed out") != nullptr);
    code = timed_out ? ErrorCode::store_timeout : ErrorCode::store_unavailable;
    message = endpoint_.name + ": cannot connect (" + (c ? c->errstr : "out of memory") + ")";
    if (c != nullptr) redisFree(c);
    return false;
  }
  redisSetTimeout(c, to_timeval(endpoint_.timeout_us));
  ctx_ = c;

  // Handshake: AUTH and SELECT, checked before any request is sent.
  std::vector<std::unique_ptr<RedisRequest>> setup;
  auto add = [&](std::initializer_list<std::string_view> args) {
    auto r = std::make_unique<RedisRequest>();
    RespWriter w(r->command, args.size());
    for (std::string_view a : args) w.arg(a);
    setup.push_back(std::move(r));
  };
  if (endpoint_.password) {
    if (endpoint_.user.empty())
      add({"AUTH", *endpoint_.password});
    else
      add({"AUTH", endpoint_.user, *endpoint_.password});
  }
  const std::string db = std::to_string(endpoint_.db);
  if (endpoint_.db != 0) add({"SELECT", db});
  if (setup.empty()) return true;

  std::vector<RedisRequest*> batch;
  for (auto& r : setup) batch.push_back(r.get());
  if (!exchange(batch, false)) {
    for (RedisRequest* r : batch) {
      if (!r->error_message.empty()) {
        code = r->error;
        message = r->error_message;
        break;
      }
    }
    return false;
  }
  for (RedisRequest* r : batch) {
    if (r->reply->type == REDIS_REPLY_ERROR) {
      // Redis's own text ("WRONGPASS ...", "ERR DB index is out of range") never contains the password.
      code = ErrorCode::store_error;
      message = endpoint_.name + ": " + (r == batch[0] && endpoint_.password ? "authentication failed: " : "") +
                r->reply->str;
      drop_connection();
      return false;
    }
  }
  return true;
}

}  // namespace ratewarden
