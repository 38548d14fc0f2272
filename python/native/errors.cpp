#include "errors.hpp"

#include <new>

namespace ratewarden::python {
namespace {

const char* class_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::invalid_argument:
      return "InvalidArgumentError";
    case ErrorCode::store_unavailable:
    case ErrorCode::store_timeout:
    case ErrorCode::store_error:
      return "StoreError";
    case ErrorCode::internal:
      break;
  }
  return "Error";
}

void raise(const Error& error) {
  py::object exc = to_python_error(error);
  PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(exc.ptr())), exc.ptr());
}

}  // namespace

py::object to_python_error(const Error& error) {
  py::object cls = py::module_::import("ratewarden._errors").attr(class_name(error.code()));
  return cls(error.what(), error_code_name(error.code()));
}

void register_error_translator() {
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const Error& e) {
      raise(e);
    }
  });
}

void set_python_error() {
  try {
    throw;
  } catch (py::error_already_set& e) {
    e.restore();
  } catch (const py::builtin_exception& e) {
    e.set_error();
  } catch (const Error& e) {
    try {
      raise(e);
    } catch (py::error_already_set& failed) {  // importing ratewarden._errors failed
      failed.restore();
    }
  } catch (const std::bad_alloc&) {
    PyErr_NoMemory();
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  } catch (...) {
    PyErr_SetString(PyExc_RuntimeError, "unknown C++ exception");
  }
}

}  // namespace ratewarden::python
