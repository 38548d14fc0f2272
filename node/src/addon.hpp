// What one instance of the addon (one per Node environment / worker thread) keeps.
#pragma once

#include <napi.h>

#include "loop_queue.hpp"

namespace rwnode {

struct AddonData {
  explicit AddonData(Napi::Env env) : queue(env) {}
  LoopQueue queue;
  Napi::FunctionReference store_class;
  Napi::FunctionReference clock_class;
};

inline AddonData& addon_data(Napi::Env env) { return *env.GetInstanceData<AddonData>(); }

}  // namespace rwnode
