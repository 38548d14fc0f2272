// ratewarden._native: the core library for the pure-Python package. Private; the API is ratewarden/__init__.py.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "bindings.hpp"
#include "errors.hpp"
#include "ratewarden/policy.hpp"
#include "ratewarden/version.hpp"

PYBIND11_MODULE(_native, m) {
  namespace rp = ratewarden::python;
  m.doc() = "ratewarden's C++ core (private: use the ratewarden package)";
  rp::register_error_translator();
  rp::bind_decision(m);
  rp::bind_test_clock(m);
  rp::bind_stats(m);
  rp::bind_events(m);
  rp::bind_store(m);
  rp::bind_limiter(m);
  rp::bind_async(m);
  rp::bind_key_list(m);
  m.def("version", &ratewarden::version, "The core library's version, \"major.minor.patch\".");
  m.def("algorithms", &ratewarden::algorithm_names, "The names of the core's table of algorithms, in its order.");
  m.attr("KEY_FORMAT_VERSION") = RATEWARDEN_KEY_FORMAT_VERSION;
}
