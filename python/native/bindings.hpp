// The parts of the _native module, each defined in its own file.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <pybind11/pybind11.h>

#include "ratewarden/limiter.hpp"

namespace ratewarden::python {

namespace py = pybind11;

void bind_decision(py::module_& m);  // limiter.cpp
void bind_store(py::module_& m);     // limiter.cpp
void bind_limiter(py::module_& m);   // limiter.cpp
void bind_test_clock(py::module_& m);  // test_clock.cpp
void bind_async(py::module_& m);     // async_calls.cpp: Completions, the asyncio side of asynchronous calls

// The clock of a TestClock (test_clock.cpp); a TypeError for anything else.
Clock test_clock(py::handle clock);

// Copies: the keys must outlive the GIL release, and another thread may change the sequence meanwhile.
std::vector<std::string> copy_keys(py::handle keys);

}  // namespace ratewarden::python
