// Limiter.hit, allow and peek: the hot calls, as METH_FASTCALL methods set on the pybind11 class through the CPython
// API. pybind11's dispatcher (overload list, argument casters, a function_call record) cost more than the memory
// store's decision itself; here the interpreter passes the arguments as a C array, the key is viewed in place and
// the answer is a bool or a Decision built with one allocation. The conversions and errors are the other methods'.
#include <cxxabi.h>

#include <string_view>

#include "bindings.hpp"
#include "convert.hpp"
#include "decision.hpp"
#include "errors.hpp"

namespace ratewarden::python {
namespace {

// The C++ Limiter of `self`, which the method descriptor has checked is a _native.Limiter (or a subclass). A pybind11
// instance whose class has one C++ base (ratewarden's Limiter always has) holds the pointer in place; any other
// layout asks pybind11.
Limiter& limiter_of(PyObject* self) {
  auto* inst = reinterpret_cast<py::detail::instance*>(self);
  void* value = inst->simple_layout ? inst->simple_value_holder[0] : py::handle(self).cast<Limiter*>();
  if (value == nullptr) throw py::type_error("this Limiter is not initialized (its __init__ was not called)");
  return *static_cast<Limiter*>(value);
}

bool is_name(PyObject* name, const char* expected) { return PyUnicode_CompareWithASCIIString(name, expected) == 0; }

// Python's (key, cost=1), given by position or by name; false with a TypeError set when the arguments do not fit.
bool key_and_cost(const char* method, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames, PyObject*& key,
                  PyObject*& cost) {
  const Py_ssize_t nkw = kwnames == nullptr ? 0 : PyTuple_GET_SIZE(kwnames);
  if (nargs > 2) {
    PyErr_Format(PyExc_TypeError, "%s() takes at most 2 arguments (%zd given)", method, nargs + nkw);
    return false;
  }
  key = nargs > 0 ? args[0] : nullptr;
  cost = nargs > 1 ? args[1] : nullptr;
  for (Py_ssize_t i = 0; i < nkw; ++i) {
    PyObject* name = PyTuple_GET_ITEM(kwnames, i);
    PyObject** slot = is_name(name, "key") ? &key : is_name(name, "cost") ? &cost : nullptr;
    if (slot == nullptr) {
      PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument '%U'", method, name);
      return false;
    }
    if (*slot != nullptr) {
      PyErr_Format(PyExc_TypeError, "%s() got multiple values for argument '%U'", method, name);
      return false;
    }
    *slot = args[nargs + i];
  }
  if (key == nullptr) {
    PyErr_Format(PyExc_TypeError, "%s() missing required argument 'key'", method);
    return false;
  }
  return true;
}

PyObject* allowed(const Decision& d) { return PyBool_FromLong(d.allowed); }

// `Call` on the core with the key and cost of the arguments, the GIL released for a store that waits on I/O —
// unless `Now` answers it at once (a hybrid mode's local knowledge: no GIL hand-off for a local denial); `Answer`
// makes the Python result.
template <Decision (Limiter::*Call)(std::string_view, int64_t),
          bool (Limiter::*Now)(std::string_view, int64_t, Decision&), PyObject* (*Answer)(const Decision&)>
PyObject* key_cost_call(const char* method, PyObject* self, PyObject* const* args, Py_ssize_t nargs,
                        PyObject* kwnames) {
  PyObject* key;
  PyObject* cost;
  if (!key_and_cost(method, args, nargs, kwnames, key, cost)) return nullptr;
  try {
    Limiter& limiter = limiter_of(self);
    const std::string_view k = key_view(key);
    const int64_t c = cost == nullptr ? 1 : to_int64(cost, "cost");
    Decision now;
    if (limiter.store()->traits().answers_now && (limiter.*Now)(k, c, now)) return Answer(now);
    return Answer(store_call(limiter, [&] { return (limiter.*Call)(k, c); }));
  } catch (abi::__forced_unwind&) {  // the thread is being ended (interpreter exit: see without_gil)
    throw;
  } catch (...) {
    set_python_error();
    return nullptr;
  }
}

PyObject* hit(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return key_cost_call<&Limiter::hit, &Limiter::hit_now, new_decision>("hit", self, args, nargs, kwnames);
}

PyObject* allow(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return key_cost_call<&Limiter::hit, &Limiter::hit_now, allowed>("allow", self, args, nargs, kwnames);
}

PyObject* peek(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return key_cost_call<&Limiter::peek, &Limiter::peek_now, new_decision>("peek", self, args, nargs, kwnames);
}

PyObject* refund(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  PyObject* key;
  PyObject* cost;
  if (!key_and_cost("refund", args, nargs, kwnames, key, cost)) return nullptr;
  try {
    Limiter& limiter = limiter_of(self);
    const std::string_view k = key_view(key);
    const int64_t c = cost == nullptr ? 1 : to_int64(cost, "cost");
    return new_decision(store_call(limiter, [&] { return limiter.refund(k, c); }));
  } catch (abi::__forced_unwind&) {  // the thread is being ended (interpreter exit: see without_gil)
    throw;
  } catch (...) {
    set_python_error();
    return nullptr;
  }
}

template <PyObject* (*F)(PyObject*, PyObject* const*, Py_ssize_t, PyObject*)>
PyCFunction as_cfunction() {
  return reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(F));
}

PyMethodDef methods[] = {
    {"hit", as_cfunction<hit>(), METH_FASTCALL | METH_KEYWORDS,
     "hit($self, key, cost=1)\n--\n\nConsumes `cost` if every policy allows it; the Decision."},
    {"allow", as_cfunction<allow>(), METH_FASTCALL | METH_KEYWORDS,
     "allow($self, key, cost=1)\n--\n\nhit(key, cost).allowed, without building the Decision."},
    {"peek", as_cfunction<peek>(), METH_FASTCALL | METH_KEYWORDS,
     "peek($self, key, cost=1)\n--\n\nWhat hit would decide, consuming nothing."},
    {"refund", as_cfunction<refund>(), METH_FASTCALL | METH_KEYWORDS,
     "refund($self, key, cost=1)\n--\n\nGives back up to `cost` of what was charged most recently on the key (e.g. a "
     "login that succeeded, when only failures count); what peek(key, cost) decides afterwards."},
};

}  // namespace

void add_fast_calls(py::handle limiter_class) {
  auto* type = reinterpret_cast<PyTypeObject*>(limiter_class.ptr());
  for (PyMethodDef& def : methods) {
    py::object method = py::reinterpret_steal<py::object>(PyDescr_NewMethod(type, &def));
    if (!method) throw py::error_already_set();
    py::setattr(limiter_class, def.ml_name, method);
  }
}

}  // namespace ratewarden::python
