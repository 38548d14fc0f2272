#include "redis_calls.hpp"

#include <vector>

#include "commands.hpp"
#include "key_slot.hpp"
#include "resp.hpp"

namespace ratewarden {

void RedisCalls::submit(std::unique_ptr<Exchange> exchange) {
  std::vector<RedisRequest*> requests = exchange->prepare(timeout_us_, name_);
  exchange.release();  // it deletes itself once every request is done
  if (requests.size() == 1)
    holder_.submit(requests[0]);
  else
    holder_.submit(std::move(requests));
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

void RedisCalls::reset(const std::string* keys, size_t count, DoneCallback done) {
  std::unique_ptr<Exchange> e(Exchange::for_done(std::move(done), REDIS_REPLY_INTEGER));
  build_delete(e->request(0), keys, count);
  if (by_slot_) e->request(0).slot = key_slot(keys[0]);
  submit(std::move(e));
}

void RedisCalls::check(DoneCallback done) {
  std::unique_ptr<Exchange> e(Exchange::for_done(std::move(done), REDIS_REPLY_STATUS));
  RespWriter(e->request(0).command, 1).arg("PING");
  if (by_slot_) e->request(0).slot = 0;
  submit(std::move(e));
}

}  // namespace ratewarden
