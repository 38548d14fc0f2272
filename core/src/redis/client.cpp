#include "client.hpp"

#include "commands.hpp"
#include "ratewarden/clock.hpp"

namespace ratewarden {
namespace {

// A callback on the I/O thread must not take the loop down with it.
template <typename F>
void guarded(F&& f) {
  try {
    f();
  } catch (...) {
  }
}

}  // namespace

void reject_request(RedisRequest* request, const std::string& message) {
  request->fail(ErrorCode::store_unavailable, message);
  request->owner->on_done(*request);
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
