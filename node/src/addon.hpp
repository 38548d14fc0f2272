// What one instance of the addon (one per Node environment: the main thread, each worker thread) keeps.
#pragma once

#include <napi.h>

#include "completions.hpp"
#include "convert.hpp"

namespace rwnode {

struct AddonData {
  explicit AddonData(Napi::Env env) : completions(env) {}
  Completions completions;
  KeyBuffer keys;
  Napi::FunctionReference store_class;
  Napi::FunctionReference clock_class;
};

inline AddonData& addon_data(Napi::Env env) { return *env.GetInstanceData<AddonData>(); }

}  // namespace rwnode
