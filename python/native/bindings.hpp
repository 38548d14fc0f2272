// The parts of the _native module, each defined in its own file.
#pragma once

#include <memory>

#include <pybind11/pybind11.h>

#include "ratewarden/limiter.hpp"

namespace ratewarden::python {

namespace py = pybind11;

void bind_decision(py::module_& m);  // limiter.cpp
void bind_store(py::module_& m);     // limiter.cpp
void bind_limiter(py::module_& m);   // limiter.cpp
void bind_testing(py::module_& m);   // testing.cpp

// async_hit.cpp: Limiter.hit_async and the wait for the calls still in flight when the interpreter exits.
void hit_async(const std::shared_ptr<Limiter>& limiter, py::handle key, py::handle cost, py::function done);
void register_async_exit_wait();

}  // namespace ratewarden::python
