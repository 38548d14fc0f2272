#include "limiter_wrap.hpp"

#include <optional>
#include <utility>
#include <vector>

#include "addon.hpp"
#include "convert.hpp"
#include "errors.hpp"
#include "store_wrap.hpp"

namespace rwnode {
namespace {

using ratewarden::Decision;
using ratewarden::ErrorCode;

struct Failure {
  ErrorCode code;
  std::string message;
};

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
  if (auto b = int_option(options, "buckets")) {
    if (*b < 1 || *b > ratewarden::kMaxBuckets) throw ratewarden::InvalidArgument("buckets must be between 1 and 1000");
    o.buckets = static_cast<int32_t>(*b);
  }
  o.prefix = string_option(options, "prefix");
  if (auto e = string_option(options, "onStoreError")) o.on_store_error = ratewarden::parse_on_store_error(*e);
  return o;
}

Napi::Array array_arg(const Napi::Value& value, const char* what) {
  if (!value.IsArray()) throw_invalid(value.Env(), std::string(what) + " must be an array");
  return value.As<Napi::Array>();
}

Napi::Function function_arg(const Napi::Value& value) {
  if (!value.IsFunction()) throw_invalid(value.Env(), "the callback must be a function");
  return value.As<Napi::Function>();
}

napi_value sync_function(Napi::Env env, const char* name, napi_callback callback, void* self) {
  napi_value fn;
  NAPI_THROW_IF_FAILED(env, napi_create_function(env, name, NAPI_AUTO_LENGTH, callback, self, &fn), nullptr);
  return fn;
}

Napi::Float64Array decisions_array(Napi::Env env, const std::vector<Decision>& decisions) {
  Napi::Float64Array out = Napi::Float64Array::New(env, decisions.size() * kDecisionFields);
  for (size_t i = 0; i < decisions.size(); ++i) write_decision(decisions[i], out.Data() + i * kDecisionFields);
  return out;
}

// One asynchronous call. Its inputs are copied on the loop thread; run() touches only C++ values.
class CallJob final : public Job {
 public:
  enum class Op { hits, hit_many, peek, reset };

  CallJob(Op op, std::shared_ptr<ratewarden::Limiter> limiter, Napi::Function done)
      : op_(op), limiter_(std::move(limiter)), done_(Napi::Persistent(done)) {}

  // A key (and its cost) for the call; for `hits`, a key that no call accepts fails alone, here.
  void add(std::string_view key, int64_t cost) {
    keys_.emplace_back(key);
    costs_.push_back(cost);
    if (op_ != Op::hits) return;
    entry_errors_.emplace_back();
    try {
      limiter_->validate(key, cost);
    } catch (const ratewarden::Error& e) {
      entry_errors_.back() = Failure{e.code(), e.what()};
    }
  }

  void run() override {
    try {
      switch (op_) {
        case Op::hits: return run_hits();
        case Op::hit_many: decisions_ = limiter_->hit_many(views(all()), costs_[0]); return;
        case Op::peek: decisions_.push_back(limiter_->peek(keys_[0], costs_[0])); return;
        case Op::reset: limiter_->reset(keys_[0]); return;
      }
    } catch (const ratewarden::Error& e) {
      error_ = Failure{e.code(), e.what()};
    } catch (const std::exception& e) {
      error_ = Failure{ErrorCode::internal, e.what()};
    }
  }

  void complete(Napi::Env env) override {
    Napi::Value error = env.Null(), decisions = env.Null(), entry_errors = env.Null();
    if (error_) {
      error = make_error(env, error_->code, error_->message).Value();
    } else {
      if (op_ != Op::reset) decisions = decisions_array(env, decisions_);
      if (op_ == Op::hits) entry_errors = entry_error_array(env);
    }
    done_.Call({error, decisions, entry_errors});
  }

  void abandon() override { done_.SuppressDestruct(); }

 private:
  std::vector<size_t> all() const {
    std::vector<size_t> out(keys_.size());
    for (size_t i = 0; i < out.size(); ++i) out[i] = i;
    return out;
  }

  std::vector<std::string_view> views(const std::vector<size_t>& indexes) const {
    std::vector<std::string_view> out;
    out.reserve(indexes.size());
    for (size_t i : indexes) out.emplace_back(keys_[i]);
    return out;
  }

  // Independent hits: one hit_many (one pipeline) per distinct cost. A store failure fails every hit that was in
  // its pipeline (with on_store_error = "raise"; otherwise the core answers for them).
  void run_hits() {
    decisions_.resize(keys_.size());
    std::vector<std::pair<int64_t, std::vector<size_t>>> groups;
    for (size_t i = 0; i < keys_.size(); ++i) {
      if (entry_errors_[i]) continue;
      auto g = groups.begin();
      while (g != groups.end() && g->first != costs_[i]) ++g;
      if (g == groups.end()) g = groups.insert(g, {costs_[i], {}});
      g->second.push_back(i);
    }
    for (const auto& [cost, indexes] : groups) {
      try {
        std::vector<Decision> got = limiter_->hit_many(views(indexes), cost);
        for (size_t j = 0; j < indexes.size(); ++j) decisions_[indexes[j]] = got[j];
      } catch (const ratewarden::Error& e) {
        for (size_t i : indexes) entry_errors_[i] = Failure{e.code(), e.what()};
      }
    }
  }

  Napi::Value entry_error_array(Napi::Env env) const {
    bool any = false;
    for (const auto& e : entry_errors_) any = any || e.has_value();
    if (!any) return env.Null();
    Napi::Array out = Napi::Array::New(env, entry_errors_.size());
    for (size_t i = 0; i < entry_errors_.size(); ++i)
      if (entry_errors_[i]) out.Set(i, make_error(env, entry_errors_[i]->code, entry_errors_[i]->message).Value());
    return out;
  }

  Op op_;
  std::shared_ptr<ratewarden::Limiter> limiter_;
  Napi::FunctionReference done_;
  std::vector<std::string> keys_;
  std::vector<int64_t> costs_;
  std::vector<std::optional<Failure>> entry_errors_;
  std::optional<Failure> error_;
  std::vector<Decision> decisions_;
};

}  // namespace

Napi::Function LimiterWrap::define(Napi::Env env) {
  return DefineClass(env, "Limiter",
                     {InstanceMethod<&LimiterWrap::reset_sync>("resetSync"),
                      InstanceMethod<&LimiterWrap::hit_many_sync>("hitManySync"),
                      InstanceMethod<&LimiterWrap::hits>("hits"),
                      InstanceMethod<&LimiterWrap::hit_many>("hitMany"),
                      InstanceMethod<&LimiterWrap::peek>("peek"),
                      InstanceMethod<&LimiterWrap::reset>("reset"),
                      InstanceMethod<&LimiterWrap::policies>("policies")});
}

LimiterWrap::LimiterWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<LimiterWrap>(info) {
  Napi::Env env = info.Env();
  StoreWrap& store = StoreWrap::from(info[0], "store");
  if (!info[1].IsString()) throw_invalid(env, "policy must be a string such as \"100/minute\"");
  if (!info[3].IsTypedArray() || info[3].As<Napi::TypedArray>().TypedArrayType() != napi_float64_array ||
      info[3].As<Napi::Float64Array>().ElementLength() < kDecisionFields)
    throw_invalid(env, "out must be a Float64Array of 6 numbers");
  const std::string policy = info[1].As<Napi::String>().Utf8Value();
  limiter_ = guarded(env, [&] {
    return std::make_shared<ratewarden::Limiter>(policy, store.store(), limiter_options(info[2]));
  });
  Napi::Float64Array out = info[3].As<Napi::Float64Array>();
  out_ref_ = Napi::Persistent(out);
  out_ = out.Data();
  // The functions die with this object: the JS layer holds them only through it.
  Napi::Object self = info.This().As<Napi::Object>();
  self.Set("hitSync", Napi::Function(env, sync_function(env, "hitSync", &decide_sync<ratewarden::Mode::hit>, this)));
  self.Set("peekSync", Napi::Function(env, sync_function(env, "peekSync", &decide_sync<ratewarden::Mode::peek>, this)));
}

template <ratewarden::Mode mode>
napi_value LimiterWrap::decide_sync(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  void* data = nullptr;
  napi_get_cb_info(env, info, &argc, argv, nullptr, &data);
  auto* self = static_cast<LimiterWrap*>(data);
  try {
    const std::string_view key = key_bytes(env, argv[0], self->scratch_);
    const int64_t cost = argc < 2 ? 1 : integer_value(env, argv[1]);
    guarded(Napi::Env(env), [&] {
      write_decision(mode == ratewarden::Mode::hit ? self->limiter_->hit(key, cost) : self->limiter_->peek(key, cost),
                     self->out_);
    });
  } catch (const Napi::Error& e) {
    e.ThrowAsJavaScriptException();
  }
  return nullptr;
}

void LimiterWrap::reset_sync(const Napi::CallbackInfo& info) {
  const std::string_view key = key_bytes(info[0], scratch_);
  guarded(info.Env(), [&] { limiter_->reset(key); });
}

Napi::Value LimiterWrap::hit_many_sync(const Napi::CallbackInfo& info) {
  Napi::Array keys = array_arg(info[0], "keys");
  const int64_t cost = integer_value(info[1]);
  std::vector<std::string> owned(keys.Length());
  std::vector<std::string_view> views(keys.Length());
  for (uint32_t i = 0; i < keys.Length(); ++i) views[i] = owned[i] = std::string(key_bytes(keys[i], scratch_));
  return decisions_array(info.Env(), guarded(info.Env(), [&] { return limiter_->hit_many(views, cost); }));
}

void LimiterWrap::hits(const Napi::CallbackInfo& info) {
  Napi::Array keys = array_arg(info[0], "keys"), costs = array_arg(info[1], "costs");
  auto job = std::make_unique<CallJob>(CallJob::Op::hits, limiter_, function_arg(info[2]));
  for (uint32_t i = 0; i < keys.Length(); ++i) job->add(key_bytes(keys[i], scratch_), integer_value(costs[i]));
  addon_data(info.Env()).queue.submit(std::move(job));
}

void LimiterWrap::hit_many(const Napi::CallbackInfo& info) {
  Napi::Array keys = array_arg(info[0], "keys");
  const int64_t cost = integer_value(info[1]);
  auto job = std::make_unique<CallJob>(CallJob::Op::hit_many, limiter_, function_arg(info[2]));
  for (uint32_t i = 0; i < keys.Length(); ++i) {
    const std::string_view key = key_bytes(keys[i], scratch_);
    guarded(info.Env(), [&] { limiter_->validate(key, cost); });  // a bad key charges nothing: fail before starting
    job->add(key, cost);
  }
  addon_data(info.Env()).queue.submit(std::move(job));
}

void LimiterWrap::peek(const Napi::CallbackInfo& info) {
  const std::string_view key = key_bytes(info[0], scratch_);
  const int64_t cost = integer_value(info[1]);
  guarded(info.Env(), [&] { limiter_->validate(key, cost); });
  auto job = std::make_unique<CallJob>(CallJob::Op::peek, limiter_, function_arg(info[2]));
  job->add(key, cost);
  addon_data(info.Env()).queue.submit(std::move(job));
}

void LimiterWrap::reset(const Napi::CallbackInfo& info) {
  const std::string_view key = key_bytes(info[0], scratch_);
  guarded(info.Env(), [&] { limiter_->validate(key, 1); });
  auto job = std::make_unique<CallJob>(CallJob::Op::reset, limiter_, function_arg(info[1]));
  job->add(key, 1);
  addon_data(info.Env()).queue.submit(std::move(job));
}

Napi::Value LimiterWrap::policies(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const auto& policies = limiter_->policies();
  Napi::Array out = Napi::Array::New(env, policies.size());
  for (size_t i = 0; i < policies.size(); ++i) {
    const ratewarden::Policy& p = policies[i];
    Napi::Object o = Napi::Object::New(env);
    o.Set("algorithm", std::string(ratewarden::algorithm_name(p.algorithm)));
    o.Set("limit", static_cast<double>(p.limit));
    o.Set("periodMs", static_cast<double>(p.period_us / 1000));
    o.Set("capacity", static_cast<double>(p.capacity()));
    out.Set(i, o);
  }
  return out;
}

}  // namespace rwnode
