// KeyList: the core's (ratewarden/key_list.hpp); the calls release the GIL when the store waits on I/O. The
// ratewarden package's KeyList (_lists.py) derives from it and adds the asyncio forms.
#include <pybind11/pybind11.h>

#include "bindings.hpp"
#include "convert.hpp"
#include "ratewarden/key_list.hpp"

namespace ratewarden::python {
namespace {

// A method of the list as a Python method of a key: the key read, the call made with the GIL released when the
// store waits on I/O.
template <typename R>
auto call(R (KeyList::*method)(std::string_view)) {
  return [method](KeyList& l, py::handle key) {
    const std::string_view k = key_view(key);
    return store_call(*l.store(), [&] { return (l.*method)(k); });
  };
}

}  // namespace

void bind_key_list(py::module_& m) {
  py::class_<KeyList>(m, "KeyList", "A deny or allow list held in a store (docs/key-lists.md).")
      .def(py::init([](std::string name, std::shared_ptr<Store> store, int64_t duration_us) {
             if (!store) throw py::type_error("store must be a Store");
             return new KeyList(std::move(name), std::move(store), duration_us);
           }),
           py::arg("name"), py::arg("store"), py::arg("duration_us"))
      .def_property_readonly("name", &KeyList::name)
      .def_property_readonly("policy", &KeyList::policy, "Its entries' policy (one hit per duration).")
      .def_property_readonly("store", &KeyList::store)
      .def_property_readonly("prefix", &KeyList::prefix, "Its entries' key prefix: \"<store's prefix>:list:<name>\".")
      .def("add", call(&KeyList::add), py::arg("key"),
           "Adds the key for the list's duration from now (again from now if it was there).")
      .def("remove", call(&KeyList::remove), py::arg("key"))
      .def("contains", call(&KeyList::contains), py::arg("key"))
      .def(
          "expires_in",
          [](KeyList& l, py::handle key) { return call(&KeyList::expires_in_us)(l, key) / 1e6; },
          py::arg("key"), "Seconds until the key's entry ends; 0 when it is not in the list.");
}

}  // namespace ratewarden::python
