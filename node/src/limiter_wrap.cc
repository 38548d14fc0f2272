#include "limiter_wrap.hpp"

#include <algorithm>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include "addon.hpp"
#include "convert.hpp"
#include "errors.hpp"
#include "stats.hpp"
#include "store_wrap.hpp"

namespace rwnode {
namespace {

using ratewarden::Completion;
using ratewarden::Decision;

std::optional<std::string> string_option(const Napi::Object& options, const char* name) {
  Napi::Value v = options.Get(name);
  if (v.IsUndefined()) return std::nullopt;
  if (!v.IsString()) throw_invalid(options.Env(), std::string(name) + " must be a string");
  return v.As<Napi::String>().Utf8Value();
}

std::optional<int64_t> int_option(const Napi::Object& options, const char* name) {
  Napi::Value v = options.Get(name);
  if (v.IsUndefined()) return std::nullopt;
  return integer_value(v, name);
}

ratewarden::LimiterOptions limiter_options(const Napi::Value& value) {
  ratewarden::LimiterOptions o;
  if (value.IsUndefined()) return o;
  Napi::Object options = value.ToObject();
  if (auto a = string_option(options, "algorithm")) o.algorithm = ratewarden::parse_algorithm(*a);
  o.burst = int_option(options, "burst");
  o.buckets = int_option(options, "buckets");
  o.prefix = string_option(options, "prefix");
  if (auto e = string_option(options, "onStoreError")) o.on_store_error = ratewarden::parse_on_store_error(*e);
  o.name = string_option(options, "name");  // the core checks it (1 to 200 bytes)
  return o;
}

Napi::Array array_arg(const Napi::Value& value, const char* what) {
  if (!value.IsArray()) throw_invalid(value.Env(), std::string(what) + " must be an array");
  return value.As<Napi::Array>();
}

// The id JS gave an asynchronous call (node/lib/calls.js).
uint32_t call_id(napi_env env, napi_value value) {
  uint32_t id = 0;
  if (napi_get_value_uint32(env, value, &id) != napi_ok) throw_invalid(Napi::Env(env), "the call id must be a number");
  return id;
}

// Infinity, or a wait beyond what an int64 of µs holds (about 292,000 years): no bound.
int64_t max_wait_us(const Napi::Value& value) {
  if (value.IsNumber() && value.As<Napi::Number>().DoubleValue() >= kInt64Bound)
    return std::numeric_limits<int64_t>::max();
  return integer_value(value, "maxWaitMs");
}

// The reservation `cancel` gives back: what the core reads of it.
Decision reservation_of(const Napi::Value& allowed, const Napi::Value& ticket) {
  Decision d;
  d.allowed = allowed.ToBoolean();
  d.ticket = integer_value(ticket, "ticket");
  return d;
}

napi_value own_function(Napi::Env env, const char* name, napi_callback callback, void* self) {
  napi_value fn;
  NAPI_THROW_IF_FAILED(env, napi_create_function(env, name, NAPI_AUTO_LENGTH, callback, self, &fn), nullptr);
  return fn;
}

Napi::Float64Array decisions_array(Napi::Env env, const std::vector<Decision>& decisions) {
  Napi::Float64Array out = Napi::Float64Array::New(env, decisions.size() * kDecisionFields);
  for (size_t i = 0; i < decisions.size(); ++i) write_decision(decisions[i], out.Data() + i * kDecisionFields);
  return out;
}

// The keys of a batch, each one's bytes owned (the buffer's space is reused by the next key).
struct KeyList {
  std::vector<std::string> owned;
  std::vector<std::string_view> views;
  KeyList(const Napi::Array& keys, KeyBuffer& buffer) : owned(keys.Length()), views(keys.Length()) {
    for (uint32_t i = 0; i < keys.Length(); ++i) views[i] = owned[i] = std::string(buffer.read(keys[i]));
  }
};

// [{algorithm, limit, periodMs, capacity}] for each rate of a policy; with `text`, also the rate as the core writes
// it ("5/60s", "2/500ms").
Napi::Array policies_array(Napi::Env env, const std::vector<ratewarden::Policy>& policies, bool text = false) {
  Napi::Array out = Napi::Array::New(env, policies.size());
  for (size_t i = 0; i < policies.size(); ++i) {
    const ratewarden::Policy& p = policies[i];
    Napi::Object o = Napi::Object::New(env);
    o.Set("algorithm", std::string(ratewarden::algorithm_name(p.algorithm)));
    o.Set("limit", static_cast<double>(p.limit));
    o.Set("periodMs", static_cast<double>(p.period_us / 1000));
    o.Set("capacity", static_cast<double>(p.capacity()));
    if (text) o.Set("text", ratewarden::describe(p));
    out.Set(i, o);
  }
  return out;
}

}  // namespace

Napi::Value policies_of(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsString()) throw_invalid(env, "policy must be a string such as \"100/minute\"");
  const std::string policy = info[0].As<Napi::String>().Utf8Value();
  return policies_array(env, guarded(env, [&] {
    const ratewarden::LimiterOptions o = limiter_options(info[1]);
    if (o.prefix) ratewarden::validate_key_prefix(*o.prefix);
    std::vector<ratewarden::Policy> policies = ratewarden::make_policies(
        ratewarden::parse_rates(policy), ratewarden::PolicyOptions{o.algorithm, o.burst, o.buckets});
    // The core's Limiter refuses one rate twice (its state would be charged twice); so does this, as it does.
    std::vector<std::string> seen;
    for (const ratewarden::Policy& p : policies) {
      std::string name = ratewarden::storage_name(p);
      if (std::find(seen.begin(), seen.end(), name) != seen.end())
        throw ratewarden::InvalidArgument("the rate " + ratewarden::describe(p) + " appears twice in \"" +
                                          policy.substr(0, 200) + "\"");
      seen.push_back(std::move(name));
    }
    return policies;
  }), true);
}

Napi::Function LimiterWrap::define(Napi::Env env) {
  return DefineClass(env, "Limiter",
                     {InstanceMethod<&LimiterWrap::reset_sync>("resetSync"),
                      InstanceMethod<&LimiterWrap::hit_many_sync>("hitManySync"),
                      InstanceMethod<&LimiterWrap::reset>("reset"),
                      InstanceMethod<&LimiterWrap::hit_many>("hitMany"),
                      InstanceMethod<&LimiterWrap::refund_sync>("refundSync"),
                      InstanceMethod<&LimiterWrap::refund>("refund"),
                      InstanceMethod<&LimiterWrap::reserve_sync>("reserveSync"),
                      InstanceMethod<&LimiterWrap::reserve>("reserve"),
                      InstanceMethod<&LimiterWrap::cancel_sync>("cancelSync"),
                      InstanceMethod<&LimiterWrap::cancel>("cancel"),
                      InstanceMethod<&LimiterWrap::policies>("policies"),
                      InstanceMethod<&LimiterWrap::stats>("stats"),
                      InstanceMethod<&LimiterWrap::count_fallback>("countFallback"),
                      InstanceAccessor<&LimiterWrap::get_name>("name")});
}

LimiterWrap::LimiterWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<LimiterWrap>(info) {
  Napi::Env env = info.Env();
  StoreWrap& store = StoreWrap::from(info[0], "store");
  if (!info[1].IsString()) throw_invalid(env, "policy must be a string such as \"100/minute\"");
  if (!info[3].IsTypedArray() || info[3].As<Napi::TypedArray>().TypedArrayType() != napi_float64_array ||
      info[3].As<Napi::Float64Array>().ElementLength() < kDecisionFields)
    throw_invalid(env, "out must be a Float64Array of " + std::to_string(kDecisionFields) + " numbers");
  const std::string policy = info[1].As<Napi::String>().Utf8Value();
  limiter_ = guarded(env, [&] {
    return std::make_shared<ratewarden::Limiter>(policy, store.store(), limiter_options(info[2]));
  });
  completions_ = &addon_data(env).completions;
  keys_ = &addon_data(env).keys;
  answers_now_ = store.store()->traits().answers_now;
  Napi::Float64Array out = info[3].As<Napi::Float64Array>();
  out_ref_ = Napi::Persistent(out);
  out_ = out.Data();
  // The own functions hold `this`: they reach JS last, defined in one call, and nothing throws after it. A
  // constructor that throws frees `this`, yet in an environment that is stopping (a worker terminated or exiting)
  // the object still reaches JS: N-API refuses calls into JS, node-addon-api drops the error it cannot throw
  // (NODE_API_SWALLOW_UNTHROWABLE_EXCEPTIONS), `new` returns the object, and the worker's code runs on until V8 acts
  // on the termination. Set one by one, a Set refused after the first two left allowSync() calling into the freed
  // object (tests/node/helpers/events_teardown.js: a SIGSEGV in about 1% of its runs under load).
  // napi_define_properties refuses only before it defines any (its preamble: data properties of a new object run no
  // JS). Refused, the object stays whole without its functions and goes with its JS object, which JS cannot use:
  // the environment refuses every call from then on, napi_unwrap's too. Made, the functions die with this object:
  // the JS layer holds them only through it.
  using ratewarden::Mode;
  const napi_value fns[] = {
      own_function(env, "hitSync", &decide_sync<Mode::hit, false>, this),
      own_function(env, "allowSync", &decide_sync<Mode::hit, true>, this),
      own_function(env, "peekSync", &decide_sync<Mode::peek, false>, this),
      own_function(env, "hit", &decide_async<Mode::hit>, this),
      own_function(env, "peek", &decide_async<Mode::peek>, this),
  };
  const char* const names[] = {"hitSync", "allowSync", "peekSync", "hit", "peek"};
  napi_property_descriptor props[5];
  for (size_t i = 0; i < 5; ++i)
    props[i] = napi_property_descriptor{names[i], nullptr, nullptr, nullptr, nullptr, fns[i], napi_default_jsproperty,
                                        nullptr};
  napi_define_properties(env, info.This(), 5, props);
}

template <ratewarden::Mode mode, bool allowed_only>
napi_value LimiterWrap::decide_sync(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  void* data = nullptr;
  napi_get_cb_info(env, info, &argc, argv, nullptr, &data);
  auto* self = static_cast<LimiterWrap*>(data);
  return js_callback(env, [&]() -> napi_value {
    const std::string_view key = self->keys_->read(env, argv[0]);
    const int64_t cost = argc < 2 ? 1 : integer_value(env, argv[1]);
    const Decision d = mode == ratewarden::Mode::hit ? self->limiter_->hit(key, cost) : self->limiter_->peek(key, cost);
    // allowSync's answer goes to out[0] too: a JS read of it costs less than a returned boolean, and allowSync then
    // does what hitSync does less the decision, so it is never the slower of the two.
    if (allowed_only)
      self->out_[0] = d.allowed ? 1 : 0;
    else
      write_decision(d, self->out_);
    return nullptr;
  });
}

template <ratewarden::Mode mode>
napi_value LimiterWrap::decide_async(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3];
  void* data = nullptr;
  napi_get_cb_info(env, info, &argc, argv, nullptr, &data);
  auto* self = static_cast<LimiterWrap*>(data);
  return js_callback(env, [&]() -> napi_value {
    const std::string_view key = self->keys_->read(env, argv[0]);
    const int64_t cost = integer_value(env, argv[1]);
    const uint32_t id = call_id(env, argv[2]);
    // A hybrid mode's local answer: written to the decision buffer, and `true` tells the caller (no call started).
    Decision now;
    if (self->answers_now_ && (mode == ratewarden::Mode::hit ? self->limiter_->hit_now(key, cost, now)
                                                             : self->limiter_->peek_now(key, cost, now))) {
      write_decision(now, self->out_);
      napi_value answered = nullptr;
      napi_get_boolean(env, true, &answered);
      return answered;
    }
    // The core validates the key and the cost, throwing before anything starts.
    if (mode == ratewarden::Mode::hit)
      self->limiter_->hit_async(key, cost, self->completions_->on_decision(id), Completion::any_thread);
    else
      self->limiter_->peek_async(key, cost, self->completions_->on_decision(id), Completion::any_thread);
    self->completions_->started(env);
    return nullptr;
  });
}

void LimiterWrap::reset_sync(const Napi::CallbackInfo& info) {
  const std::string_view key = keys_->read(info[0]);
  guarded(info.Env(), [&] { limiter_->reset(key); });
}

Napi::Value LimiterWrap::hit_many_sync(const Napi::CallbackInfo& info) {
  KeyList keys(array_arg(info[0], "keys"), *keys_);
  const int64_t cost = integer_value(info[1]);
  return decisions_array(info.Env(), guarded(info.Env(), [&] { return limiter_->hit_many(keys.views, cost); }));
}

void LimiterWrap::reset(const Napi::CallbackInfo& info) {
  const std::string_view key = keys_->read(info[0]);
  const uint32_t id = call_id(info.Env(), info[1]);
  guarded(info.Env(), [&] { limiter_->reset_async(key, completions_->on_done(id), Completion::any_thread); });
  completions_->started(info.Env());
}

void LimiterWrap::hit_many(const Napi::CallbackInfo& info) {
  KeyList keys(array_arg(info[0], "keys"), *keys_);
  const int64_t cost = integer_value(info[1]);
  const uint32_t id = call_id(info.Env(), info[2]);
  // Every key is validated before anything is charged.
  guarded(info.Env(), [&] {
    limiter_->hit_many_async(keys.views, cost, completions_->on_decisions(id), Completion::any_thread);
  });
  completions_->started(info.Env());
}

void LimiterWrap::refund_sync(const Napi::CallbackInfo& info) {
  const std::string_view key = keys_->read(info[0]);
  const int64_t cost = integer_value(info[1]);
  write_decision(guarded(info.Env(), [&] { return limiter_->refund(key, cost); }), out_);
}

void LimiterWrap::refund(const Napi::CallbackInfo& info) {
  const std::string_view key = keys_->read(info[0]);
  const int64_t cost = integer_value(info[1]);
  const uint32_t id = call_id(info.Env(), info[2]);
  guarded(info.Env(), [&] {
    limiter_->refund_async(key, cost, completions_->on_decision(id), Completion::any_thread);
  });
  completions_->started(info.Env());
}

void LimiterWrap::reserve_sync(const Napi::CallbackInfo& info) {
  const std::string_view key = keys_->read(info[0]);
  const int64_t cost = integer_value(info[1]);
  const int64_t wait = max_wait_us(info[2]);
  write_decision(guarded(info.Env(), [&] { return limiter_->reserve(key, cost, wait); }), out_);
}

void LimiterWrap::reserve(const Napi::CallbackInfo& info) {
  const std::string_view key = keys_->read(info[0]);
  const int64_t cost = integer_value(info[1]);
  const int64_t wait = max_wait_us(info[2]);
  const uint32_t id = call_id(info.Env(), info[3]);
  guarded(info.Env(), [&] {
    limiter_->reserve_async(key, cost, wait, completions_->on_decision(id, Completions::kReservation),
                            Completion::any_thread);
  });
  completions_->started(info.Env());
}

Napi::Value LimiterWrap::cancel_sync(const Napi::CallbackInfo& info) {
  const std::string_view key = keys_->read(info[0]);
  const int64_t cost = integer_value(info[1]);
  const Decision slot = reservation_of(info[2], info[3]);
  return Napi::Boolean::New(info.Env(), guarded(info.Env(), [&] { return limiter_->cancel(key, cost, slot); }));
}

void LimiterWrap::cancel(const Napi::CallbackInfo& info) {
  const std::string_view key = keys_->read(info[0]);
  const int64_t cost = integer_value(info[1]);
  const Decision slot = reservation_of(info[2], info[3]);
  const uint32_t id = call_id(info.Env(), info[4]);
  guarded(info.Env(), [&] {
    limiter_->cancel_async(key, cost, slot, completions_->on_decision(id), Completion::any_thread);
  });
  completions_->started(info.Env());
}

Napi::Value LimiterWrap::policies(const Napi::CallbackInfo& info) {
  return policies_array(info.Env(), limiter_->policies());
}

Napi::Value LimiterWrap::stats(const Napi::CallbackInfo& info) {
  return limiter_stats_object(info.Env(), limiter_->stats());
}

// For the HTTP layer, which applies onStoreError itself: a decision it made without the store, counted as a fallback.
void LimiterWrap::count_fallback(const Napi::CallbackInfo& info) {
  limiter_->count_fallback(info[0].ToBoolean().Value(), 1);
}

Napi::Value LimiterWrap::get_name(const Napi::CallbackInfo& info) {
  return Napi::String::New(info.Env(), limiter_->name());
}

}  // namespace rwnode
