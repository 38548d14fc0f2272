#include "convert.hpp"

#include "ratewarden/errors.hpp"

namespace ratewarden::python {
namespace {

[[noreturn]] void wrong_type(py::handle value, const char* name, const char* expected) {
  throw py::type_error(std::string(name) + " must be " + expected + ", not " + Py_TYPE(value.ptr())->tp_name);
}

}  // namespace

std::string_view key_view(py::handle key) {
  PyObject* o = key.ptr();
  if (PyBytes_Check(o)) return {PyBytes_AS_STRING(o), static_cast<size_t>(PyBytes_GET_SIZE(o))};
  if (!PyUnicode_Check(o)) wrong_type(key, "key", "str or bytes");
  Py_ssize_t size = 0;
  const char* data = PyUnicode_AsUTF8AndSize(o, &size);  // cached in the str object: no copy after the first call
  if (data == nullptr) {
    PyErr_Clear();
    throw InvalidArgument("the key is a str that cannot be encoded as UTF-8 (a lone surrogate?)");
  }
  return {data, static_cast<size_t>(size)};
}

int64_t to_int64(py::handle value, const char* name) {
  PyObject* o = value.ptr();
  if (PyBool_Check(o) || !PyIndex_Check(o)) wrong_type(value, name, "an int");
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
  if (v == -1 && PyErr_Occurred()) throw py::error_already_set();
  if (overflow != 0) throw InvalidArgument(std::string(name) + " is out of range (it does not fit in 64 bits)");
  return v;
}

std::optional<int64_t> to_optional_int64(py::handle value, const char* name) {
  if (value.is_none()) return std::nullopt;
  return to_int64(value, name);
}

std::string to_string(py::handle value, const char* name) {
  if (!PyUnicode_Check(value.ptr())) wrong_type(value, name, "a str");
  Py_ssize_t size = 0;
  const char* data = PyUnicode_AsUTF8AndSize(value.ptr(), &size);
  if (data == nullptr) {
    PyErr_Clear();
    throw InvalidArgument(std::string(name) + " cannot be encoded as UTF-8");
  }
  return {data, static_cast<size_t>(size)};
}

std::optional<std::string> to_optional_string(py::handle value, const char* name) {
  if (value.is_none()) return std::nullopt;
  return to_string(value, name);
}

}  // namespace ratewarden::python
