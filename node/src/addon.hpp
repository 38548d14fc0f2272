// What one instance of the addon (one per Node environment: the main thread, each worker thread) keeps.
#pragma once

#include <napi.h>

#include <memory>

#include "completions.hpp"
#include "convert.hpp"
#include "events.hpp"

namespace rwnode {

struct AddonData {
  explicit AddonData(Napi::Env env) : completions(env) {}
  Completions completions;
  KeyBuffer keys;
  Napi::FunctionReference store_class;
  Napi::FunctionReference clock_class;
  std::unique_ptr<EventSink> events;  // made by setEventHandler
};

inline AddonData& addon_data(Napi::Env env) { return *env.GetInstanceData<AddonData>(); }

}  // namespace rwnode
