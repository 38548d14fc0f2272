#include "redis_calls.hpp"

#include <vector>

#include "commands.hpp"
#include "key_slot.hpp"
#include "reset_log.hpp"
#include "resp.hpp"

namespace ratewarden {

void RedisCalls::submit(RedisClientHolder& holder, std::unique_ptr<Exchange> exchange, int64_t timeout_us,
                        const std::string& name) {
  std::vector<RedisRequest*> requests = exchange->prepare(timeout_us, name);
  exchange.release();  // it deletes itself once every request is done
  if (requests.size() == 1)
    holder.submit(requests[0]);
  else
    holder.submit(std::move(requests));
}

void RedisCalls::decide(const StoreCall& call, DecisionCallback done) {
  std::unique_ptr<Exchange> e(Exchange::for_decision(std::move(done)));
  build_script_call(e->request(0), call, script_now(clock_));
  if (by_slot_) e->request(0).slot = key_slot(call.keys[0]);
  submit(std::move(e));
}

void RedisCalls::decide_many(const StoreCall* calls, size_t n, DecisionsCallback done) {
  if (n == 0) {
    done(nullptr, nullptr);
    return;
  }
  std::unique_ptr<Exchange> e(Exchange::for_decisions(n, std::move(done)));
  const std::string now = script_now(clock_);
  for (size_t i = 0; i < n; ++i) {
    build_script_call(e->request(i), calls[i], now);
    if (by_slot_) e->request(i).slot = key_slot(calls[i].keys[0]);
  }
  submit(std::move(e));
}

void RedisCalls::reset(const std::string* keys, size_t count, std::string_view tag, const std::string& prefix,
                       DoneCallback done) {
  // Logged once the keys are gone, so that a process that reads the entry and asks the store again finds them gone.
  std::unique_ptr<Exchange> del(Exchange::for_done(
      [done = std::move(done), holder = holder_, log_key = reset_log_key(prefix), tag = std::string(tag),
       timeout_us = timeout_us_, name = name_, by_slot = by_slot_](const Error* e) mutable {
        if (e != nullptr) return done(e);
        std::unique_ptr<Exchange> announce(Exchange::for_done(std::move(done), REDIS_REPLY_INTEGER));
        build_reset_announce(announce->request(0), log_key, tag);
        if (by_slot) announce->request(0).slot = key_slot(log_key);
        submit(*holder, std::move(announce), timeout_us, name);
      },
      REDIS_REPLY_INTEGER));
  build_delete(del->request(0), keys, count);
  if (by_slot_) del->request(0).slot = key_slot(keys[0]);
  submit(std::move(del));
}

void RedisCalls::read_resets(const std::string& prefix, int64_t cursor, ResetLogCallback done) {
  std::unique_ptr<Exchange> e(Exchange::for_reply([done = std::move(done), name = name_](const redisReply* r, const Error* error) {
    if (error != nullptr) return done(nullptr, error);
    ResetLogRead read;
    try {
      read = to_reset_log_read(r, name);
    } catch (const Error& bad) {
      return done(nullptr, &bad);
    }
    done(&read, nullptr);
  }));
  const std::string log_key = reset_log_key(prefix);
  build_reset_read(e->request(0), log_key, cursor);
  if (by_slot_) e->request(0).slot = key_slot(log_key);
  submit(std::move(e));
}

void RedisCalls::check(DoneCallback done) {
  std::unique_ptr<Exchange> e(Exchange::for_done(std::move(done), REDIS_REPLY_STATUS));
  RespWriter(e->request(0).command, 1).arg("PING");
  if (by_slot_) e->request(0).slot = 0;
  submit(std::move(e));
}

}  // namespace ratewarden
