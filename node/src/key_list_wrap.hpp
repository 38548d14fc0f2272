// KeyList (node/lib/lists.js): the core's list (ratewarden/key_list.hpp) for its rules — the name, the duration, its
// entries' policy and prefix. The calls go through a Limiter of that policy on the same store, asynchronously (a
// synchronous call here would block the event loop on a network store).
#pragma once

#include <napi.h>

#include <memory>

#include "ratewarden/key_list.hpp"

namespace rwnode {

// new KeyList(name, store, durationUs): policy, prefix.
class KeyListWrap : public Napi::ObjectWrap<KeyListWrap> {
 public:
  static Napi::Function define(Napi::Env env);
  explicit KeyListWrap(const Napi::CallbackInfo& info);

 private:
  Napi::Value get_policy(const Napi::CallbackInfo& info);
  Napi::Value get_prefix(const Napi::CallbackInfo& info);

  std::unique_ptr<ratewarden::KeyList> list_;
};

}  // namespace rwnode
