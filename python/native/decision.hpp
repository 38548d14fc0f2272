// ratewarden._native.Decision: a small C type (not a pybind11 class) holding a ratewarden::Decision by value, so that
// Limiter.hit builds its answer with one allocation and reads of its fields are plain member slots. A type caster
// lets every pybind11 function return a Decision (or a list of them) as this type.
#pragma once

#include <pybind11/pybind11.h>

#include "ratewarden/decision.hpp"

namespace ratewarden::python {

namespace py = pybind11;

void bind_decision(py::module_& m);  // creates the type; before any call that returns a Decision

// A new ratewarden._native.Decision (a new reference), or nullptr with a Python error set (no memory).
PyObject* new_decision(const Decision& d);

// The decision `o` holds, or nullptr when `o` is not a ratewarden._native.Decision.
const Decision* decision_of(PyObject* o);

}  // namespace ratewarden::python

namespace pybind11::detail {

template <>
struct type_caster<ratewarden::Decision> {
  PYBIND11_TYPE_CASTER(ratewarden::Decision, const_name("Decision"));

  bool load(handle src, bool) {
    const ratewarden::Decision* d = ratewarden::python::decision_of(src.ptr());
    if (d == nullptr) return false;
    value = *d;
    return true;
  }

  static handle cast(const ratewarden::Decision& d, return_value_policy, handle) {
    PyObject* o = ratewarden::python::new_decision(d);
    if (o == nullptr) throw error_already_set();
    return o;
  }
};

}  // namespace pybind11::detail
