// The parts of the _native module, each defined in its own file.
#pragma once

#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <pybind11/pybind11.h>

#include "decision.hpp"
#include "ratewarden/limiter.hpp"

namespace ratewarden::python {

namespace py = pybind11;

void bind_store(py::module_& m);       // limiter.cpp
void bind_limiter(py::module_& m);     // limiter.cpp
void bind_test_clock(py::module_& m);  // test_clock.cpp
void bind_async(py::module_& m);       // async_calls.cpp: Completions, the asyncio side of asynchronous calls
void bind_key_list(py::module_& m);    // key_list.cpp
void bind_stats(py::module_& m);       // stats.cpp: LimiterStats, StoreStats, the metric families
void bind_events(py::module_& m);      // events.cpp: the core's events to a Python handler

// Sets hit, allow and peek on the Limiter class (fast_calls.cpp).
void add_fast_calls(py::handle limiter_class);

// The clock of a TestClock (test_clock.cpp); a TypeError for anything else.
Clock test_clock(py::handle clock);

// `call()` with the GIL released, taken back in plain code rather than in a destructor (py::gil_scoped_release's):
// a daemon thread that comes back from the core while the interpreter exits is ended by Python there with
// pthread_exit, whose unwinding must not start in a destructor (noexcept: std::terminate, the process aborts).
template <typename Call>
auto without_gil(Call&& call) {
  using Result = decltype(call());
  PyThreadState* saved = PyEval_SaveThread();
  std::exception_ptr error;
  if constexpr (std::is_void_v<Result>) {
    try {
      call();
    } catch (...) {
      error = std::current_exception();
    }
    PyEval_RestoreThread(saved);
    if (error) std::rethrow_exception(error);
  } else {
    std::optional<Result> result;
    try {
      result.emplace(call());
    } catch (...) {
      error = std::current_exception();
    }
    PyEval_RestoreThread(saved);
    if (error) std::rethrow_exception(error);
    return std::move(*result);
  }
}

// The core call, with the GIL released around it when the store waits on I/O (Redis). The memory store's calls
// take a few hundred ns: releasing the GIL there only wakes a thread waiting for it, which costs the process more
// CPU than the call itself (1-10 us per call amid 4 busy threads: bench/python/calls.py, "contended").
template <typename Call>
auto store_call(const Store& store, Call&& call) {
  if (!store.traits().blocks_on_io) return call();
  return without_gil(std::forward<Call>(call));
}
template <typename Call>
auto store_call(const Limiter& limiter, Call&& call) {
  return store_call(*limiter.store(), std::forward<Call>(call));
}

// Copies: the keys must outlive the GIL release, and another thread may change the sequence meanwhile.
std::vector<std::string> copy_keys(py::handle keys);

}  // namespace ratewarden::python
