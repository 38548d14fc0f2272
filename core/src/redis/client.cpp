#include "client.hpp"

#include "commands.hpp"
#include "io/fork_guard.hpp"
#include "ratewarden/clock.hpp"

namespace ratewarden {
namespace {

// What a forked child inherited and must never touch: kept reachable (for leak checkers), never used.
void abandon(void* inherited) {
  static ForkSafeMutex* mu = new ForkSafeMutex;
  static auto* kept = new std::vector<void*>;
  std::lock_guard<ForkSafeMutex> lock(*mu);
  kept->push_back(inherited);
}

// A callback on the I/O thread must not take the loop down with it.
template <typename F>
void guarded(F&& f) {
  try {
    f();
  } catch (...) {
  }
}

}  // namespace

// No call can race with the destructor (the store is going): the client goes after every task already posted
// for it, at the end of a turn of the loop.
ClientHolder::~ClientHolder() {
  Generation* g = current_.load(std::memory_order_acquire);
  if (g == nullptr) return;
  if (g->fork_generation != fork_generation()) {  // the parent's: nothing of it is ours to close
    abandon(g);
    abandon(g->client);
    return;
  }
  RedisClient* client = g->client;
  IoLoop* loop = g->loop;
  loop->post([client, loop] {
    client->close();
    loop->defer([client] { delete client; });
  });
  delete g;
}

// Calls may race with close(): the client stays (until the destructor) and fails what still reaches it.
void ClientHolder::close() {
  closed_.store(true, std::memory_order_release);
  Generation* g = current_.load(std::memory_order_acquire);
  if (g == nullptr || g->fork_generation != fork_generation()) return;
  RedisClient* client = g->client;
  g->loop->post([client] { client->close(); });
}

ClientHolder::Generation* ClientHolder::current() {
  Generation* g = current_.load(std::memory_order_acquire);
  const uint64_t gen = fork_generation();
  if (g != nullptr && g->fork_generation == gen) return g;
  IoLoop& loop = IoLoop::current();
  auto* fresh = new Generation{gen, &loop, factory_(loop).release()};
  Generation* seen = g;
  if (current_.compare_exchange_strong(seen, fresh, std::memory_order_acq_rel)) {
    if (g != nullptr) {
      abandon(g);
      abandon(g->client);
    }
    return fresh;
  }
  delete fresh->client;  // another thread made this process's client first; this one never ran
  delete fresh;
  return seen;  // not null: current_ only ever moves to a newer generation
}

// The requests of a closed store fail at once; on the I/O thread (a call made from a completion) they are routed
// now and leave with this turn's output. Returns the client to post them to otherwise, or null.
RedisClient* ClientHolder::dispatch_now(RedisRequest* const* requests, size_t n, IoLoop*& loop) {
  if (closed_.load(std::memory_order_acquire)) {
    for (size_t i = 0; i < n; ++i) {
      requests[i]->fail(ErrorCode::store_unavailable, closed_message_);
      requests[i]->owner->on_done(*requests[i]);
    }
    return nullptr;
  }
  Generation* g = current();
  if (IoLoop::on_loop_thread()) {
    for (size_t i = 0; i < n; ++i) g->client->route(requests[i]);
    return nullptr;
  }
  loop = g->loop;
  return g->client;
}

void ClientHolder::submit(std::vector<RedisRequest*> requests) {
  IoLoop* loop = nullptr;
  RedisClient* client = dispatch_now(requests.data(), requests.size(), loop);
  if (client == nullptr) return;
  loop->post([client, requests = std::move(requests)] {
    for (RedisRequest* r : requests) client->route(r);
  });
}

void ClientHolder::submit(RedisRequest* request) {
  IoLoop* loop = nullptr;
  RedisClient* client = dispatch_now(&request, 1, loop);
  if (client != nullptr) loop->post([client, request] { client->route(request); });
}

Exchange* Exchange::for_decision(DecisionCallback done) {
  auto* e = new Exchange(1);
  e->one_ = std::move(done);
  return e;
}

Exchange* Exchange::for_decisions(size_t n, DecisionsCallback done) {
  auto* e = new Exchange(n);
  e->many_ = std::move(done);
  return e;
}

Exchange* Exchange::for_done(DoneCallback done, int reply_type) {
  auto* e = new Exchange(1);
  e->done_ = std::move(done);
  e->reply_type_ = reply_type;
  return e;
}

Exchange* Exchange::for_reply(ReplyCallback done) {
  auto* e = new Exchange(1);
  e->reply_ = std::move(done);
  return e;
}

std::vector<RedisRequest*> Exchange::prepare(int64_t timeout_us, std::string name) {
  name_ = std::move(name);
  const int64_t deadline = monotonic_now_us() + timeout_us;
  std::vector<RedisRequest*> out;
  out.reserve(requests_.size());
  for (RedisRequest& r : requests_) {
    r.owner = this;
    r.deadline_us = deadline;
    if (requests_.size() > 1) r.batch = this;
    out.push_back(&r);
  }
  return out;
}

void Exchange::on_done(RedisRequest&) {
  if (--left_ == 0) finish();
}

void Exchange::finish() {
  if (reply_) {
    const RedisRequest& r = requests_[0];
    if (r.failed() || r.reply == nullptr || r.reply->type == REDIS_REPLY_ERROR) {
      try {
        throw_reply_error(r, name_);
      } catch (const Error& e) {
        guarded([&] { reply_(nullptr, &e); });
      }
    } else {
      guarded([&] { reply_(r.reply.get(), nullptr); });
    }
  } else if (done_) {
    try {
      expect_reply(requests_[0], reply_type_, name_);
    } catch (const Error& e) {
      guarded([&] { done_(&e); });
      delete this;
      return;
    }
    guarded([&] { done_(nullptr); });
  } else if (one_) {
    Decision d;
    try {
      d = to_decision(requests_[0], name_);
    } catch (const Error& e) {
      guarded([&] { one_(nullptr, &e); });
      delete this;
      return;
    }
    guarded([&] { one_(&d, nullptr); });
  } else {
    std::vector<Decision> decisions(requests_.size());
    std::vector<std::optional<StoreError>> errors(requests_.size());
    for (size_t i = 0; i < requests_.size(); ++i) {
      try {
        decisions[i] = to_decision(requests_[i], name_);
      } catch (const StoreError& e) {
        errors[i] = e;
      }
    }
    guarded([&] { many_(decisions.data(), errors.data()); });
  }
  delete this;
}

}  // namespace ratewarden
