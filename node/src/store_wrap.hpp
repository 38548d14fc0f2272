// Store (a store opened by URL, shared by limiters) and TestClock (a manual clock for tests).
#pragma once

#include <napi.h>

#include <atomic>
#include <memory>

#include "ratewarden/store.hpp"

namespace rwnode {

// new TestClock(startUs): a shared integer "now" in µs that a store made with it reads instead of its clock.
class TestClockWrap : public Napi::ObjectWrap<TestClockWrap> {
 public:
  static Napi::Function define(Napi::Env env);
  explicit TestClockWrap(const Napi::CallbackInfo& info);
  const std::shared_ptr<std::atomic<int64_t>>& now() const { return now_; }

 private:
  Napi::Value get(const Napi::CallbackInfo& info);
  void set(const Napi::CallbackInfo& info, const Napi::Value& value);

  std::shared_ptr<std::atomic<int64_t>> now_ = std::make_shared<std::atomic<int64_t>>(0);
};

// new Store(url[, testClock[, openShared]]): openShared, through the core's open_shared_store (store.js, storeFor).
class StoreWrap : public Napi::ObjectWrap<StoreWrap> {
 public:
  static Napi::Function define(Napi::Env env);
  explicit StoreWrap(const Napi::CallbackInfo& info);
  const std::shared_ptr<ratewarden::Store>& store() const { return store_; }
  // A store that never waits on I/O (the memory store) decides in well under a microsecond: the JS layer calls it
  // synchronously on the loop. From the store's traits.
  bool in_memory() const { return in_memory_; }
  // The Store wrapped by `value`, or a thrown invalid-argument error naming `what`.
  static StoreWrap& from(const Napi::Value& value, const char* what);

 private:
  Napi::Value describe(const Napi::CallbackInfo& info);
  // The core store's address, as text: the same for every StoreWrap around one core store while it lives
  // (http_scope.js keys named scopes by it).
  Napi::Value get_identity(const Napi::CallbackInfo& info);
  // The core's StoreStats (stats.hpp: store_stats_object).
  Napi::Value stats(const Napi::CallbackInfo& info);
  Napi::Value get_in_memory(const Napi::CallbackInfo& info);
  Napi::Value get_shared(const Napi::CallbackInfo& info);

  std::shared_ptr<ratewarden::Store> store_;
  bool in_memory_ = false;
};

}  // namespace rwnode
