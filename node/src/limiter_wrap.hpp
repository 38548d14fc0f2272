// Limiter: the core's Limiter for JS. Synchronous calls write their decision into a Float64Array shared with the JS
// layer (no object per call); asynchronous calls run on the core's thread pool and answer through a callback.
#pragma once

#include <napi.h>

#include <memory>
#include <string>

#include "ratewarden/limiter.hpp"

namespace rwnode {

class LimiterWrap : public Napi::ObjectWrap<LimiterWrap> {
 public:
  static Napi::Function define(Napi::Env env);
  // new Limiter(store, policy, {algorithm, burst, buckets, prefix, onStoreError}, out: Float64Array(6))
  explicit LimiterWrap(const Napi::CallbackInfo& info);

 private:
  // Synchronous: hitSync(key[, cost]), peekSync(key[, cost]); the decision goes to `out`. Own functions of each
  // instance that find it through their data pointer: on the memory store the whole call takes a few hundred ns,
  // and an instance method's unwrap and argument checks would be a good part of that.
  template <ratewarden::Mode mode>
  static napi_value decide_sync(napi_env env, napi_callback_info info);
  // resetSync(key).
  void reset_sync(const Napi::CallbackInfo& info);
  // (keys, cost) -> Float64Array of 6 numbers per key.
  Napi::Value hit_many_sync(const Napi::CallbackInfo& info);

  // Asynchronous, each ending in done(error, decisions: Float64Array | null, errors: (Error | undefined)[] | null):
  // hits(keys, costs, done): independent hits sent together; each has its own decision or error.
  void hits(const Napi::CallbackInfo& info);
  // hitMany(keys, cost, done), peek(key, cost, done), reset(key, done): one answer (or error) for the call.
  void hit_many(const Napi::CallbackInfo& info);
  void peek(const Napi::CallbackInfo& info);
  void reset(const Napi::CallbackInfo& info);

  // [{algorithm, limit, periodMs, burst}] for each rate of the policy.
  Napi::Value policies(const Napi::CallbackInfo& info);

  std::shared_ptr<ratewarden::Limiter> limiter_;
  Napi::Reference<Napi::Float64Array> out_ref_;
  double* out_ = nullptr;
  std::string scratch_;
};

}  // namespace rwnode
