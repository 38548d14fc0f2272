// The native module: registers Store, TestClock, Limiter, setCompletionHandler, drainCompletions, holdWakeups,
// releaseWakeups, algorithms, policiesOf, setEventHandler, the process's figures (limiterStats, storeStats, metricFamilies,
// prometheusText, metricCatalog: stats.hpp), and the calls that measure the floor (emptyCall, readKeyCall, coreHits).
// The JS API around them is node/lib/.
#include <napi.h>

#include <string>
#include <vector>

#include "addon.hpp"
#include "errors.hpp"
#include "key_list_wrap.hpp"
#include "limiter_wrap.hpp"
#include "ratewarden/limiter.hpp"
#include "ratewarden/policy.hpp"
#include "ratewarden/version.hpp"
#include "stats.hpp"
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

// setCompletionHandler(complete, later): the JS functions that settle the calls in flight and schedule the next
// drain (node/lib/calls.js).
void set_completion_handler(const Napi::CallbackInfo& info) {
  if (!info[0].IsFunction() || !info[1].IsFunction())
    throw_invalid(info.Env(), "setCompletionHandler(complete, later) takes two functions");
  addon_data(info.Env()).completions.set_handler(info.Env(), info[0], info[1]);
}

// drainCompletions(): what `later` calls from a setImmediate.
void drain_completions(const Napi::CallbackInfo& info) { addon_data(info.Env()).completions.drain_now(info.Env()); }

// setEventHandler(handler): this environment gets the core's events, handler(kind, store, message, suppressed,
// warning) called on its loop (events.hpp; node/lib/events.js). Called again, it replaces the handler.
void set_event_handler(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsFunction()) throw_invalid(env, "setEventHandler(handler) takes a function");
  AddonData& data = addon_data(env);
  if (!data.events) data.events = std::make_unique<EventSink>(env);
  data.events->set_handler(env, info[0]);
}

// holdWakeups(), releaseWakeups(): around the calls that a batch of answers leads to (node/lib/calls.js; limiter.hpp).
void hold_wakeups(const Napi::CallbackInfo&) { ratewarden::hold_io_wakeups(); }
void release_wakeups(const Napi::CallbackInfo&) { ratewarden::release_io_wakeups(); }

// The floors under every synchronous decision, measured by bench/node/in_process.js: emptyCall(key[, cost]) takes
// its arguments as hitSync does and does nothing (the cost of a call into the addon); readKeyCall(key[, cost]) also
// reads the key as hitSync does (what any call given a string key pays before the core is reached).
template <bool read_key>
napi_value floor_call(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  void* data = nullptr;
  napi_get_cb_info(env, info, &argc, argv, nullptr, &data);
  if constexpr (read_key) {
    return js_callback(env, [&]() -> napi_value {
      static_cast<AddonData*>(data)->keys.read(env, argv[0]);
      return nullptr;
    });
  }
  return nullptr;
}

// coreHits(policy, keys, n): n hits of the core's Limiter on a memory store of its own, keys[i % keys.length] each,
// in one loop in C++ with the keys read beforehand: what a hit costs below the addon, measured in the same process
// as the Node calls (bench/node/in_process.js: allowSync less this and readKeyCall is the binding's own cost).
// Returns how many were allowed.
Napi::Value core_hits(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsString() || !info[1].IsArray() || !info[2].IsNumber())
    throw_invalid(env, "coreHits(policy, keys, n) takes a string, an array of keys and a number");
  const std::string policy = info[0].As<Napi::String>().Utf8Value();
  const Napi::Array array = info[1].As<Napi::Array>();
  std::vector<std::string> keys;
  for (uint32_t i = 0; i < array.Length(); ++i) keys.emplace_back(addon_data(env).keys.read(array.Get(i)));
  const int64_t n = info[2].As<Napi::Number>().Int64Value();
  return Napi::Number::New(env, static_cast<double>(guarded(env, [&] {
    if (keys.empty()) throw ratewarden::InvalidArgument("coreHits: keys is empty");
    ratewarden::Limiter limiter(policy, ratewarden::open_store("memory://"));
    int64_t allowed = 0;
    for (int64_t i = 0; i < n; ++i) allowed += limiter.hit(keys[static_cast<size_t>(i) % keys.size()]).allowed;
    return allowed;
  })));
}

// With the environment, after its cleanup hooks: nothing here calls into JS.
void free_addon_data(napi_env, void* data, void*) { delete static_cast<AddonData*>(data); }

}  // namespace

Napi::Object init(Napi::Env env, Napi::Object exports) {
  auto* data = new AddonData(env);
  NAPI_THROW_IF_FAILED(env, napi_set_instance_data(env, data, &free_addon_data, nullptr), exports);
  Napi::Function store = StoreWrap::define(env), clock = TestClockWrap::define(env);
  data->store_class = Napi::Persistent(store);
  data->clock_class = Napi::Persistent(clock);
  exports.Set("Store", store);
  exports.Set("TestClock", clock);
  exports.Set("Limiter", LimiterWrap::define(env));
  exports.Set("KeyList", KeyListWrap::define(env));
  exports.Set("setCompletionHandler", Napi::Function::New<set_completion_handler>(env, "setCompletionHandler"));
  exports.Set("holdWakeups", Napi::Function::New<hold_wakeups>(env, "holdWakeups"));
  exports.Set("releaseWakeups", Napi::Function::New<release_wakeups>(env, "releaseWakeups"));
  exports.Set("drainCompletions", Napi::Function::New<drain_completions>(env, "drainCompletions"));
  // Made as the Limiter's own functions are: the C API, with a data pointer.
  napi_value empty, read_key;
  NAPI_THROW_IF_FAILED(env, napi_create_function(env, "emptyCall", NAPI_AUTO_LENGTH, floor_call<false>, data, &empty),
                       exports);
  NAPI_THROW_IF_FAILED(
      env, napi_create_function(env, "readKeyCall", NAPI_AUTO_LENGTH, floor_call<true>, data, &read_key), exports);
  exports.Set("emptyCall", Napi::Value(env, empty));
  exports.Set("readKeyCall", Napi::Value(env, read_key));
  exports.Set("coreHits", Napi::Function::New(env, core_hits, "coreHits"));
  exports.Set("version", ratewarden::version());
  exports.Set("algorithms", Napi::Function::New(env, algorithms, "algorithms"));
  exports.Set("policiesOf", Napi::Function::New(env, policies_of, "policiesOf"));
  exports.Set("setEventHandler", Napi::Function::New<set_event_handler>(env, "setEventHandler"));
  define_stats_functions(env, exports);
  return exports;
}

}  // namespace rwnode

static Napi::Object init_addon(Napi::Env env, Napi::Object exports) { return rwnode::init(env, exports); }

NODE_API_MODULE(ratewarden, init_addon)
