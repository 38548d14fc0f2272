// The core's events (ratewarden/events.hpp) delivered to the Node environments of the process.
//
// The core has ONE event handler per process, and a process may run several Node environments: the main thread and
// each worker thread, each with its own loop. The addon installs the core's handler once, and keeps one
// process-wide list of sinks: one per environment that asked for events (setEventHandler, node/lib/events.js), each
// a thread-safe function of that environment, unref'd (it never keeps a loop alive). The handler runs on the
// library's callback thread and hands a copy of the event to every sink with a non-blocking call: a sink whose
// queue is full (its loop stuck for a long while) drops it; nothing ever waits for a loop. Every environment gets
// every event: the stores they come from are the process's (one store per shared URL, whichever thread opened it).
//
// Teardown: a sink leaves the list under the list's lock in its environment's cleanup hook, which is registered
// after its thread-safe function, so it runs before Node closes that function; the handler calls the sinks under
// the same lock, so it never calls a function that is closing. Events still queued when Node closes the function
// are freed without touching JS (call_js with no env). An environment that exits while events arrive loses them.
#pragma once

#include <node_api.h>

#include "ratewarden/events.hpp"

namespace rwnode {

class EventSink {
 public:
  // Loop thread: joins the process's list (and installs the core's handler, the first time in the process).
  // Throws Napi::Error when N-API refuses.
  explicit EventSink(napi_env env);
  ~EventSink();
  EventSink(const EventSink&) = delete;
  EventSink& operator=(const EventSink&) = delete;

  // Loop thread: the JS function called with (kind, store, message, suppressed, warning) for each event.
  void set_handler(napi_env env, napi_value handler);

  // Any thread; never throws, never blocks.
  void post(const ratewarden::Event& event) noexcept;

 private:
  static void call_js(napi_env env, napi_value, void* context, void* data) noexcept;
  static void detach(void* self) noexcept;

  napi_env env_;
  napi_threadsafe_function fn_ = nullptr;
  napi_ref handler_ = nullptr;
};

}  // namespace rwnode
