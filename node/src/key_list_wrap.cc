#include "key_list_wrap.hpp"

#include <string>

#include "addon.hpp"
#include "errors.hpp"
#include "store_wrap.hpp"

namespace rwnode {

Napi::Function KeyListWrap::define(Napi::Env env) {
  return DefineClass(env, "KeyList",
                     {InstanceAccessor<&KeyListWrap::get_policy>("policy"),
                      InstanceAccessor<&KeyListWrap::get_prefix>("prefix")});
}

KeyListWrap::KeyListWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<KeyListWrap>(info) {
  Napi::Env env = info.Env();
  if (!info[0].IsString()) throw_invalid(env, "a KeyList name must be a string");
  const std::string name = info[0].As<Napi::String>().Utf8Value();
  const StoreWrap& store = StoreWrap::from(info[1], "store");
  const int64_t duration_us = integer_value(info[2], "durationUs");
  list_ = guarded(env, [&] { return std::make_unique<ratewarden::KeyList>(name, store.store(), duration_us); });
}

Napi::Value KeyListWrap::get_policy(const Napi::CallbackInfo& info) {
  return Napi::String::New(info.Env(), list_->policy());
}

Napi::Value KeyListWrap::get_prefix(const Napi::CallbackInfo& info) {
  return Napi::String::New(info.Env(), list_->prefix());
}

}  // namespace rwnode
