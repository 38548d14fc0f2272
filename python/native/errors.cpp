#include "errors.hpp"

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
      py::object exc = to_python_error(e);
      PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(exc.ptr())), exc.ptr());
    }
  });
}

}  // namespace ratewarden::python
