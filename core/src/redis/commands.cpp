#include "commands.hpp"

#include <algorithm>

#include "ratewarden/algorithms.hpp"
#include "ratewarden/errors.hpp"
#include "resp.hpp"
#include "scripts.hpp"

namespace ratewarden {
void throw_reply_error(const RedisRequest& req, const std::string& name) {
  if (!req.error_message.empty()) throw StoreError(req.error, req.error_message);
  const redisReply* r = req.reply.get();
  if (r != nullptr && r->type == REDIS_REPLY_ERROR) throw StoreError(ErrorCode::store_error, name + ": " + r->str);
  throw StoreError(ErrorCode::store_error, name + ": unexpected reply");
}

namespace {

// The one-integer reply of a fast path (<algorithm>_fast.lua) on policy p: x for an allowed call, -1 - x for a
// denial.
Decision from_integer(const RedisRequest& req, const Policy& p, int64_t v) {
  const bool allowed = v >= 0;
  const int64_t x = allowed ? v : -1 - v;
  Decision d;
  if (p.algorithm == Algorithm::fixed_window) {
    // x = left_ms * (limit + 1) + remaining; a denial waits left_ms (the window's end, or for an empty window a
    // whole period); an empty window has no reset.
    const int64_t remaining = x % (p.limit + 1);
    const int64_t left_us = x / (p.limit + 1) * 1000;
    d = Decision{allowed, p.limit, remaining, remaining == p.limit ? 0 : left_us, allowed ? 0 : left_us,
                 p.limit - remaining, 0};
  } else if (p.algorithm == Algorithm::sliding_window) {
    // x = reset_after_us * (limit + 1) + remaining, for an allowed call only (a denial replies with the table).
    const int64_t remaining = x % (p.limit + 1);
    d = Decision{true, p.limit, remaining, x / (p.limit + 1), 0, p.limit - remaining, 0};
  } else {
    // gcra and token_bucket store the same number (gcra's TAT is the bucket's full-at instant: token_bucket.lua), and
    // x is it less the server's now. gcra's own function reports it, as a peek at that state: what a denied hit
    // decided, or, after an allowed hit, everything but the admission itself.
    // A reservation's hit was charged at now + wait, where the TAT lies `wait` beyond the burst (0 for a hit).
    const int64_t wait = allowed && req.mode == Mode::reserve ? std::max<int64_t>(0, x - p.burst * p.interval_us()) : 0;
    GcraState state{x - wait};
    gcra(state, 0, p, req.cost, Mode::peek, d);
    if (allowed) {
      d.allowed = true;
      d.retry_after_us = 0;
      d.reset_after_us += wait;
      d.wait_us = wait;
    }
  }
  return d;
}

// The two-integer replies of gcra_fast.lua's one-policy reserve {tat - now, ticket} and cancel {given, tat - now}.
Decision from_pair(const RedisRequest& req, int64_t a, int64_t b) {
  if (req.mode == Mode::reserve) {
    Decision d = from_integer(req, req.policy, a);
    d.ticket = b;
    return d;
  }
  Decision d;
  GcraState state{b};
  gcra(state, 0, req.policy, req.cost, Mode::peek, d);
  d.allowed = a == 1;
  return d;
}

// The one-integer reply of a several-policy fast path: x * n + policy_index, where x is the reported policy's own
// one-integer reply (for a denial, -1 - that).
Decision from_indexed(const RedisRequest& req, int64_t v) {
  const auto n = static_cast<int64_t>(req.policies.size());
  const bool allowed = v >= 0;
  const int64_t packed = allowed ? v : -1 - v;
  const auto index = static_cast<int32_t>(packed % n);
  const int64_t x = packed / n;
  Decision d = from_integer(req, req.policies[index], allowed ? x : -1 - x);
  d.allowed = allowed;
  d.policy_index = index;
  return d;
}

}  // namespace

std::string script_now(const Clock& clock) { return clock ? std::to_string(clock()) : std::string(); }

void build_script_call(RedisRequest& req, const StoreCall& call, const std::string& now) {
  const LuaScript& script = lua_script(call.policies[0].algorithm);
  const size_t argc = 3 + call.count + 3 + 3 * call.count;
  req.script = &script.body;
  req.argc = argc;
  req.policy = call.policies[0];
  if (call.count > 1)
    req.policies.assign(call.policies, call.policies + call.count);
  else
    req.policies.clear();
  req.cost = call.cost;
  req.mode = call.mode;
  RespWriter w(req.command, argc);
  w.arg("EVALSHA").arg(script.sha);
  req.args_offset = req.command.size();
  w.arg(static_cast<int64_t>(call.count));
  for (size_t i = 0; i < call.count; ++i) w.arg(call.keys[i]);
  w.arg(call.cost);
  switch (call.mode) {
    case Mode::hit: w.arg("1"); break;
    case Mode::peek: w.arg("0"); break;
    case Mode::reserve: w.arg("r" + std::to_string(call.max_wait_us)); break;
    case Mode::cancel: w.arg("c" + std::to_string(call.ticket)); break;
    case Mode::refund: w.arg("f"); break;
  }
  w.arg(now);
  for (size_t i = 0; i < call.count; ++i) {
    const Policy& p = call.policies[i];
    w.arg(p.limit).arg(p.period_us).arg(p.option_value());
  }
}

void build_delete(RedisRequest& req, const std::string* keys, size_t count) {
  RespWriter w(req.command, 1 + count);
  w.arg("DEL");
  for (size_t i = 0; i < count; ++i) w.arg(keys[i]);
}

Decision to_decision(const RedisRequest& req, const std::string& name) {
  // decide_all.lua's reply (prelude.lua): one policy {allowed (1/0), remaining, reset_after, retry_after[, used]},
  // the limit being the policy's capacity and used = limit - remaining when left out; several policies {allowed,
  // limit, remaining, reset_after, retry_after, used, policy_index}. Or one integer, from a fast path.
  const redisReply* r = req.reply.get();
  if (req.error_message.empty() && r != nullptr && r->type == REDIS_REPLY_INTEGER) {
    if (r->integer < 0 && req.policy.algorithm == Algorithm::sliding_window) throw_reply_error(req, name);
    if (!req.policies.empty()) return from_indexed(req, r->integer);
    return from_integer(req, req.policy, r->integer);
  }
  // Reservations and cancels (gcra_fast.lua): {a, b} for one policy; several: the 7 integers, and the wait when
  // allowed.
  const bool pair = req.mode == Mode::reserve || req.mode == Mode::cancel;
  if (!req.error_message.empty() || r == nullptr || r->type != REDIS_REPLY_ARRAY ||
      (pair ? r->elements != 2 && r->elements < 7 : r->elements != 4 && r->elements != 5 && r->elements != 7) ||
      r->elements > 8)
    throw_reply_error(req, name);
  int64_t v[8];
  for (size_t i = 0; i < r->elements; ++i) {
    if (r->element[i]->type != REDIS_REPLY_INTEGER) throw_reply_error(req, name);
    v[i] = r->element[i]->integer;
  }
  if (r->elements == 2) return from_pair(req, v[0], v[1]);
  if (r->elements >= 7) {
    Decision d{v[0] == 1, v[1], v[2], v[3], v[4], v[5], static_cast<int32_t>(v[6])};
    if (r->elements == 8) d.wait_us = v[7];
    return d;
  }
  const int64_t capacity = req.policy.capacity();
  const int64_t used = r->elements == 5 ? v[4] : capacity - v[1];
  return Decision{v[0] == 1, capacity, v[1], v[2], v[3], used, 0};
}

void expect_reply(const RedisRequest& req, int type, const std::string& name) {
  if (!req.error_message.empty() || req.reply == nullptr || req.reply->type != type) throw_reply_error(req, name);
}

}  // namespace ratewarden
