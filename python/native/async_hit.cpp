// Limiter.hit_async: the hit runs on the core's thread pool (ratewarden::hit_async) and `done(decision, error)` is
// called there, with the GIL taken only for that call. ratewarden.Limiter.ahit turns it into an awaitable.
//
// A pool thread must not take the GIL once the interpreter is finalizing, so an atexit hook waits (GIL released) for
// the calls still in flight; each one ends within the store's timeouts.
#include <condition_variable>
#include <mutex>
#include <string>

#include "bindings.hpp"
#include "convert.hpp"
#include "errors.hpp"

namespace ratewarden::python {
namespace {

struct InFlight {
  std::mutex mu;
  std::condition_variable idle;
  long count = 0;
};

InFlight& in_flight() {
  static auto* state = new InFlight;  // never destroyed: pool threads may still use it during static destruction
  return *state;
}

void finish_one() {
  InFlight& f = in_flight();
  std::lock_guard<std::mutex> lock(f.mu);
  if (--f.count == 0) f.idle.notify_all();
}

}  // namespace

void hit_async(const std::shared_ptr<Limiter>& limiter, py::handle key, py::handle cost, py::function done) {
  std::string k(key_view(key));
  const int64_t c = to_int64(cost, "cost");
  // The callback is owned by hand: the pool thread drops it with the GIL held, never in a destructor without it.
  PyObject* callback = done.release().ptr();
  {
    std::lock_guard<std::mutex> lock(in_flight().mu);
    ++in_flight().count;
  }
  try {
    ratewarden::hit_async(limiter, std::move(k), c, [callback](const Decision* decision, const Error* error) {
      {
        py::gil_scoped_acquire gil;
        py::object fn = py::reinterpret_steal<py::object>(callback);
        try {
          if (decision != nullptr)
            fn(*decision, py::none());
          else
            fn(py::none(), to_python_error(*error));
        } catch (py::error_already_set& e) {
          e.discard_as_unraisable("ratewarden: the hit_async callback");
        }
      }
      finish_one();
    });
  } catch (...) {  // bad input, found before anything started: `done` will not be called
    Py_DECREF(callback);
    finish_one();
    throw;
  }
}

void register_async_exit_wait() {
  py::module_::import("atexit").attr("register")(py::cpp_function([] {
    py::gil_scoped_release nogil;
    InFlight& f = in_flight();
    std::unique_lock<std::mutex> lock(f.mu);
    f.idle.wait(lock, [&] { return f.count == 0; });
  }));
}

}  // namespace ratewarden::python
