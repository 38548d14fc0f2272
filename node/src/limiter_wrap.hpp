// Limiter: the core's Limiter for JS. Synchronous calls (the memory store) write their decision into a Float64Array
// shared with the JS layer (no object per call). Asynchronous calls are the core's async calls: each one starts and
// returns; its answer reaches the JS completion handler under the id JS gave it (completions.hpp).
#pragma once

#include <napi.h>

#include <memory>
#include <string>

#include "completions.hpp"
#include "convert.hpp"
#include "ratewarden/limiter.hpp"

namespace rwnode {

// policiesOf(policy, {algorithm, burst, buckets, prefix}): the rates a Limiter of these options would have, as
// limiter.policies() gives them plus each one's `text` as the core writes it ("5/60s"), or what its constructor
// would throw — with no Limiter made: a Limiter's name is
// in the process's figures from its creation on (node/lib/http.js makes its limiters on their first request).
Napi::Value policies_of(const Napi::CallbackInfo& info);

class LimiterWrap : public Napi::ObjectWrap<LimiterWrap> {
 public:
  static Napi::Function define(Napi::Env env);
  // new Limiter(store, policy, {algorithm, burst, buckets, prefix, onStoreError, name},
  //             out: Float64Array(kDecisionFields))
  explicit LimiterWrap(const Napi::CallbackInfo& info);

 private:
  // Own functions of each instance that find it through their data pointer (an instance method's unwrap and
  // argument checks would be a good part of a memory-store call):
  //  hitSync(key[, cost]), peekSync(key[, cost]): the decision goes to `out`;
  //  allowSync(key[, cost]): a hit that writes only whether it is allowed, to out[0];
  //  hit(key, cost, id), peek(key, cost, id): asynchronous. Bad input throws here, before anything starts.
  template <ratewarden::Mode mode, bool allowed_only>
  static napi_value decide_sync(napi_env env, napi_callback_info info);
  template <ratewarden::Mode mode>
  static napi_value decide_async(napi_env env, napi_callback_info info);
  // resetSync(key).
  void reset_sync(const Napi::CallbackInfo& info);
  // hitManySync(keys, cost) -> Float64Array of kDecisionFields numbers per key.
  Napi::Value hit_many_sync(const Napi::CallbackInfo& info);
  // Asynchronous: reset(key, id), hitMany(keys, cost, id).
  void reset(const Napi::CallbackInfo& info);
  void hit_many(const Napi::CallbackInfo& info);
  // Reservations (node/lib/limiter.js): reserveSync(key, cost, maxWaitUs) writes to `out`; reserve(key, cost,
  // maxWaitUs, id) answers as kReservation. maxWaitUs: an integer or Infinity. cancelSync(key, cost, allowed,
  // ticket) -> boolean; cancel(key, cost, allowed, ticket, id) answers a decision whose allowed = given back.
  // refundSync(key, cost) writes to `out`; refund(key, cost, id) answers a decision.
  void refund_sync(const Napi::CallbackInfo& info);
  void refund(const Napi::CallbackInfo& info);
  void reserve_sync(const Napi::CallbackInfo& info);
  void reserve(const Napi::CallbackInfo& info);
  Napi::Value cancel_sync(const Napi::CallbackInfo& info);
  void cancel(const Napi::CallbackInfo& info);

  // [{algorithm, limit, periodMs, capacity}] for each rate of the policy.
  Napi::Value policies(const Napi::CallbackInfo& info);
  // {name, allowed, denied, cost, fallbacks}: the core's LimiterStats of this limiter.
  Napi::Value stats(const Napi::CallbackInfo& info);
  void count_fallback(const Napi::CallbackInfo& info);
  // What its figures are counted under: the name option, else the policy string (the core's rule).
  Napi::Value get_name(const Napi::CallbackInfo& info);

  std::shared_ptr<ratewarden::Limiter> limiter_;
  Completions* completions_ = nullptr;  // the environment's; lives as long as it
  Napi::Reference<Napi::Float64Array> out_ref_;
  double* out_ = nullptr;
  KeyBuffer* keys_ = nullptr;           // the environment's too
  bool answers_now_ = false;            // the store may answer hit/peek in-process (hybrid modes)
};

}  // namespace rwnode
