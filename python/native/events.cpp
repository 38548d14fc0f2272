// The core's events (ratewarden/events.hpp) delivered to one Python callable: ratewarden/_events.py's dispatcher,
// which logs them and calls the callbacks of ratewarden.on_event.
//
// The core calls its handler on its callback thread (never the I/O thread), one event at a time; the handler takes
// the GIL there. Interpreter exit: an atexit function (registered with the first handler, so it runs after the
// program's own atexit functions) closes the delivery — events still queued in the core are dropped — and waits,
// with the GIL released, for one being delivered to return, so that no thread enters Python once it finalizes. A
// forked child (whose callback thread is its own, started by the core) delivers its own events: its copy of the
// state below is made usable again, since the parent's callback thread may have held its lock at the fork.
#include <pthread.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <new>

#include "bindings.hpp"
#include "ratewarden/events.hpp"

namespace ratewarden::python {
namespace {

struct Delivery {
  std::mutex mu;
  std::condition_variable idle;
  bool open = true;      // false from interpreter exit on
  int delivering = 0;    // handler calls between the check of `open` and their return
  PyObject* handler = nullptr;  // a strong reference; read and written with the GIL held
};

Delivery& delivery() {
  static auto* d = new Delivery;  // never destroyed: the callback thread outlives static destruction
  return *d;
}

// How long interpreter exit waits for an event being delivered (a callback that blocks past it is abandoned).
constexpr auto kExitWait = std::chrono::seconds(5);

void after_fork_in_child() {
  // The only thread of the child: the parent's callback thread, which may have held the lock, is not here.
  Delivery& d = delivery();
  new (&d.mu) std::mutex;
  new (&d.idle) std::condition_variable;
  d.delivering = 0;
}

void deliver(const Event& event) {
  Delivery& d = delivery();
  {
    std::lock_guard<std::mutex> lock(d.mu);
    if (!d.open) return;
    ++d.delivering;
  }
  {
    py::gil_scoped_acquire gil;
    if (d.handler != nullptr) {
      try {
        py::handle(d.handler)(py::cast(event));
      } catch (py::error_already_set& error) {
        error.discard_as_unraisable("ratewarden's event handler");
      } catch (const std::exception&) {  // the event could not be converted: nothing to deliver
      }
    }
  }
  std::lock_guard<std::mutex> lock(d.mu);
  --d.delivering;
  d.idle.notify_all();
}

// At interpreter exit, with the GIL.
void close_delivery() {
  Delivery& d = delivery();
  {
    std::lock_guard<std::mutex> lock(d.mu);
    if (!d.open) return;
    d.open = false;
  }
  set_event_handler(nullptr);
  {
    py::gil_scoped_release nogil;
    std::unique_lock<std::mutex> lock(d.mu);
    d.idle.wait_for(lock, kExitWait, [&d] { return d.delivering == 0; });
  }
  PyObject* handler = d.handler;
  d.handler = nullptr;
  Py_XDECREF(handler);
}

void set_handler(py::handle handler) {
  Delivery& d = delivery();
  static bool installed = false;
  if (!handler.is_none() && !PyCallable_Check(handler.ptr())) throw py::type_error("the handler must be callable");
  PyObject* old = d.handler;
  d.handler = handler.is_none() ? nullptr : handler.inc_ref().ptr();
  Py_XDECREF(old);
  if (installed || d.handler == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(d.mu);
    if (!d.open) return;  // exiting already
  }
  installed = true;
  pthread_atfork(nullptr, nullptr, after_fork_in_child);
  py::module_::import("atexit").attr("register")(py::cpp_function(&close_delivery));
  set_event_handler(&deliver);
}

}  // namespace

void bind_events(py::module_& m) {
  py::class_<Event>(m, "Event",
                    "What an operator must not miss (ratewarden.on_event): a store that failed or recovered, a "
                    "circuit that opened or closed, a fork, live keys evicted, a lease that expired.")
      .def_property_readonly("kind", [](const Event& e) { return event_kind_name(e.kind); },
                             "'store_failed', 'store_recovered', 'circuit_opened', 'circuit_closed', "
                             "'fork_detected', 'live_evictions' or 'lease_expired'.")
      .def_readonly("store", &Event::store, "The store's name (its URL, password masked).")
      .def_readonly("message", &Event::message, "What happened, for a log line.")
      .def_readonly("suppressed", &Event::suppressed,
                    "Events of this kind and store not delivered since the last one (at most one a second).")
      .def_property_readonly("warning", [](const Event& e) { return is_warning(e.kind); },
                             "Whether a log shows it as a warning (failures, openings, evictions).")
      .def("__repr__", [](const Event& e) {
        return py::str("Event(kind={!r}, store={!r}, message={!r}, suppressed={})")
            .format(event_kind_name(e.kind), e.store, e.message, e.suppressed);
      });
  m.def("set_event_handler", &set_handler, py::arg("handler"),
        "The process's one event handler (ratewarden/_events.py sets it): called with each Event on the core's "
        "callback thread, the GIL taken; None removes it. Removed at interpreter exit.");
}

}  // namespace ratewarden::python
