#include "events.hpp"

#include <napi.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <vector>

namespace rwnode {
namespace {

// Events waiting for one loop, beyond which that loop's copies are dropped. The core sends at most one event per
// kind and store in a second, so only a loop blocked for minutes gets there.
constexpr size_t kQueue = 1024;

struct Sinks {
  std::mutex mu;
  std::vector<EventSink*> list;
  std::once_flag installed;
};

Sinks& sinks() {
  static auto* s = new Sinks;  // never destroyed: the callback thread may outlive static destruction
  return *s;
}

// The core's handler, on its callback thread.
void on_event(const ratewarden::Event& event) {
  Sinks& s = sinks();
  std::lock_guard<std::mutex> lock(s.mu);
  for (EventSink* sink : s.list) sink->post(event);
}

}  // namespace

EventSink::EventSink(napi_env env) : env_(env) {
  napi_value name;
  NAPI_THROW_IF_FAILED_VOID(env, napi_create_string_utf8(env, "ratewarden events", NAPI_AUTO_LENGTH, &name));
  NAPI_THROW_IF_FAILED_VOID(env, napi_create_threadsafe_function(env, nullptr, nullptr, name, kQueue, 1, nullptr,
                                                                 nullptr, this, &EventSink::call_js, &fn_));
  NAPI_THROW_IF_FAILED_VOID(env, napi_unref_threadsafe_function(env, fn_));
  // Cleanup hooks run in reverse order of registration: this one before the thread-safe function's own.
  NAPI_THROW_IF_FAILED_VOID(env, napi_add_env_cleanup_hook(env, &EventSink::detach, this));
  Sinks& s = sinks();
  {
    std::lock_guard<std::mutex> lock(s.mu);
    s.list.push_back(this);
  }
  std::call_once(s.installed, [] { ratewarden::set_event_handler(&on_event); });
}

// With the addon's instance data, after the cleanup hooks.
EventSink::~EventSink() {
  detach(this);
  if (handler_ != nullptr) napi_delete_reference(env_, handler_);
}

void EventSink::detach(void* self) noexcept {
  Sinks& s = sinks();
  std::lock_guard<std::mutex> lock(s.mu);
  s.list.erase(std::remove(s.list.begin(), s.list.end(), static_cast<EventSink*>(self)), s.list.end());
}

void EventSink::set_handler(napi_env env, napi_value handler) {
  napi_ref ref;
  NAPI_THROW_IF_FAILED_VOID(env, napi_create_reference(env, handler, 1, &ref));
  if (handler_ != nullptr) napi_delete_reference(env, handler_);
  handler_ = ref;
}

void EventSink::post(const ratewarden::Event& event) noexcept {
  try {
    auto copy = std::make_unique<ratewarden::Event>(event);
    if (napi_call_threadsafe_function(fn_, copy.get(), napi_tsfn_nonblocking) == napi_ok) copy.release();
  } catch (...) {  // out of memory: the event is lost, never the process
  }
}

// On the loop thread. `env` is null when Node empties the function's queue at teardown: then `context` may be gone,
// and only the event is freed. A listener that throws is an uncaught exception of the process, as for any emitter.
void EventSink::call_js(napi_env env, napi_value, void* context, void* data) noexcept {
  std::unique_ptr<ratewarden::Event> event(static_cast<ratewarden::Event*>(data));
  if (env == nullptr || context == nullptr || event == nullptr) return;
  auto* self = static_cast<EventSink*>(context);
  napi_value fn, recv, argv[5];
  if (self->handler_ == nullptr || napi_get_reference_value(env, self->handler_, &fn) != napi_ok || fn == nullptr ||
      napi_get_undefined(env, &recv) != napi_ok ||
      napi_create_string_utf8(env, ratewarden::event_kind_name(event->kind), NAPI_AUTO_LENGTH, &argv[0]) != napi_ok ||
      napi_create_string_utf8(env, event->store.data(), event->store.size(), &argv[1]) != napi_ok ||
      napi_create_string_utf8(env, event->message.data(), event->message.size(), &argv[2]) != napi_ok ||
      napi_create_double(env, static_cast<double>(event->suppressed), &argv[3]) != napi_ok ||
      napi_get_boolean(env, ratewarden::is_warning(event->kind), &argv[4]) != napi_ok)
    return;
  napi_call_function(env, recv, fn, 5, argv, nullptr);
}

}  // namespace rwnode
