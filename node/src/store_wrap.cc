#include "store_wrap.hpp"

#include <cmath>
#include <cstdint>
#include <string>

#include "addon.hpp"
#include "errors.hpp"
#include "stats.hpp"

namespace rwnode {
namespace {

int64_t microseconds(const Napi::Value& value, const char* what) {
  const double d = value.IsNumber() ? value.As<Napi::Number>().DoubleValue() : NAN;
  if (!std::isfinite(d) || std::floor(d) != d || std::fabs(d) > 9007199254740991.0)
    throw_invalid(value.Env(), std::string(what) + " must be an integer number of microseconds");
  return static_cast<int64_t>(d);
}

}  // namespace

Napi::Function TestClockWrap::define(Napi::Env env) {
  return DefineClass(env, "TestClock",
                     {InstanceAccessor<&TestClockWrap::get, &TestClockWrap::set>("nowUs")});
}

TestClockWrap::TestClockWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<TestClockWrap>(info) {
  now_->store(microseconds(info[0], "the start time"));
}

Napi::Value TestClockWrap::get(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), static_cast<double>(now_->load()));
}

void TestClockWrap::set(const Napi::CallbackInfo&, const Napi::Value& value) { now_->store(microseconds(value, "nowUs")); }

Napi::Function StoreWrap::define(Napi::Env env) {
  return DefineClass(env, "Store",
                     {InstanceMethod<&StoreWrap::describe>("describe"),
                      InstanceMethod<&StoreWrap::stats>("stats"),
                      InstanceAccessor<&StoreWrap::get_in_memory>("inMemory"),
                      InstanceAccessor<&StoreWrap::get_shared>("shared"),
                      InstanceAccessor<&StoreWrap::get_identity>("identity")});
}

StoreWrap::StoreWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<StoreWrap>(info) {
  Napi::Env env = info.Env();
  if (!info[0].IsString()) throw_invalid(env, "store must be a URL string such as \"memory://\" or \"redis://host:6379\"");
  const std::string url = info[0].As<Napi::String>().Utf8Value();
  store_ = guarded(env, [&] {
    if (info[2].IsBoolean() && info[2].As<Napi::Boolean>().Value()) return ratewarden::open_shared_store(url);
    if (info[1].IsUndefined()) return ratewarden::open_store(url);
    Napi::Object clock = info[1].ToObject();
    if (!clock.InstanceOf(addon_data(env).clock_class.Value())) throw_invalid(env, "testClock must be a TestClock");
    std::shared_ptr<std::atomic<int64_t>> now = TestClockWrap::Unwrap(clock)->now();
    return ratewarden::open_store(url, [now] { return now->load(); });
  });
  in_memory_ = !store_->traits().blocks_on_io;
}

StoreWrap& StoreWrap::from(const Napi::Value& value, const char* what) {
  Napi::Env env = value.Env();
  if (!value.IsObject() || !value.As<Napi::Object>().InstanceOf(addon_data(env).store_class.Value()))
    throw_invalid(env, std::string(what) + " must be a Store");
  return *Unwrap(value.As<Napi::Object>());
}

Napi::Value StoreWrap::describe(const Napi::CallbackInfo& info) {
  return Napi::String::New(info.Env(), store_->describe());
}

Napi::Value StoreWrap::stats(const Napi::CallbackInfo& info) {
  return store_stats_object(info.Env(), guarded(info.Env(), [&] { return store_->stats(); }));
}

Napi::Value StoreWrap::get_in_memory(const Napi::CallbackInfo& info) {
  return Napi::Boolean::New(info.Env(), in_memory_);
}

Napi::Value StoreWrap::get_shared(const Napi::CallbackInfo& info) {
  return Napi::Boolean::New(info.Env(), store_->traits().shared);
}

Napi::Value StoreWrap::get_identity(const Napi::CallbackInfo& info) {
  return Napi::String::New(info.Env(), std::to_string(reinterpret_cast<uintptr_t>(store_.get())));
}

}  // namespace rwnode
