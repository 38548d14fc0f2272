// The native module: registers Store, TestClock and Limiter. The JS API around them is node/lib/.
#include <napi.h>

#include <string>
#include <vector>

#include "addon.hpp"
#include "limiter_wrap.hpp"
#include "ratewarden/policy.hpp"
#include "ratewarden/version.hpp"
#include "store_wrap.hpp"

namespace rwnode {
namespace {

// algorithms(): the names of the core's table of algorithms, in its order.
Napi::Value algorithms(const Napi::CallbackInfo& info) {
  const std::vector<std::string> names = ratewarden::algorithm_names();
  Napi::Array out = Napi::Array::New(info.Env(), names.size());
  for (uint32_t i = 0; i < names.size(); ++i) out.Set(i, names[i]);
  return out;
}

}  // namespace

Napi::Object init(Napi::Env env, Napi::Object exports) {
  auto* data = new AddonData(env);
  env.SetInstanceData(data);
  Napi::Function store = StoreWrap::define(env), clock = TestClockWrap::define(env);
  data->store_class = Napi::Persistent(store);
  data->clock_class = Napi::Persistent(clock);
  exports.Set("Store", store);
  exports.Set("TestClock", clock);
  exports.Set("Limiter", LimiterWrap::define(env));
  exports.Set("version", ratewarden::version());
  exports.Set("algorithms", Napi::Function::New(env, algorithms, "algorithms"));
  return exports;
}

}  // namespace rwnode

static Napi::Object init_addon(Napi::Env env, Napi::Object exports) { return rwnode::init(env, exports); }

NODE_API_MODULE(ratewarden, init_addon)
