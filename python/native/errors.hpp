// ratewarden::Error into the exception classes of ratewarden._errors (Error, InvalidArgumentError, StoreError).
#pragma once

#include <pybind11/pybind11.h>

#include "ratewarden/errors.hpp"

namespace ratewarden::python {

namespace py = pybind11;

// The Python exception for `error`, with its `code` attribute set ("invalid_argument", "store_timeout", ...).
py::object to_python_error(const Error& error);

// Makes every ratewarden::Error thrown through pybind11 raise its Python class.
void register_error_translator();

// For functions called by Python directly, not through pybind11: sets the Python error that pybind11 would raise
// for the C++ exception being handled. Call it only inside a catch block.
void set_python_error();

}  // namespace ratewarden::python
