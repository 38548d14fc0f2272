#include "convert.hpp"

#include <cmath>
#include <limits>

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

int64_t to_max_wait_us(py::handle seconds) {
  if (seconds.is_none()) return std::numeric_limits<int64_t>::max();
  PyObject* o = seconds.ptr();
  if (PyBool_Check(o) || !(PyFloat_Check(o) || PyLong_Check(o))) wrong_type(seconds, "max_wait", "a number of seconds");
  const double s = PyFloat_AsDouble(o);
  if (s == -1.0 && PyErr_Occurred()) throw py::error_already_set();
  if (std::isnan(s)) throw InvalidArgument("max_wait is NaN");
  if (s < 0) throw InvalidArgument("max_wait must be >= 0 seconds, got " + std::to_string(s));
  if (s >= 9e12) return std::numeric_limits<int64_t>::max();  // about 285,000 years, and inf: no bound
  return static_cast<int64_t>(std::floor(s * 1e6));  // never a longer wait than asked
}

}  // namespace ratewarden::python
