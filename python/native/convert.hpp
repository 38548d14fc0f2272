// Python arguments into C++ values, converted with the GIL held. A wrong type raises TypeError; a value that is out
// of range raises ratewarden::InvalidArgument (ratewarden.InvalidArgumentError), like every other bad value.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <pybind11/pybind11.h>

namespace ratewarden::python {

namespace py = pybind11;

// A key: str (as UTF-8) or bytes, viewed in place. The view is valid while `key` is alive; both types are
// immutable, so it stays valid with the GIL released.
std::string_view key_view(py::handle key);

// An int (or an object with __index__), never a bool or a float; `name` is used in messages.
int64_t to_int64(py::handle value, const char* name);
// Seconds (int or float; None and inf: no bound) as the core's max_wait_us, rounded down.
int64_t to_max_wait_us(py::handle seconds);
std::optional<int64_t> to_optional_int64(py::handle value, const char* name);

// A str, never bytes.
std::string to_string(py::handle value, const char* name);
std::optional<std::string> to_optional_string(py::handle value, const char* name);

}  // namespace ratewarden::python
