// Decision, Policy, Store and Limiter: argument conversion around the core's calls, the GIL released around each
// call to a store that waits on I/O.
#include <string>
#include <vector>

#include <pybind11/stl.h>

#include "bindings.hpp"
#include "convert.hpp"
#include "ratewarden/policy.hpp"

namespace ratewarden::python {
namespace {

double seconds(int64_t us) { return static_cast<double>(us) / 1e6; }

std::string decision_repr(const Decision& d) {
  py::str format(
      "Decision(allowed={}, limit={}, remaining={}, reset_after={!r}, retry_after={!r}, used={}, policy_index={})");
  return format.format(d.allowed, d.limit, d.remaining, seconds(d.reset_after_us), seconds(d.retry_after_us), d.used,
                       d.policy_index);
}

// Options the constructor takes by keyword; values are converted here, checked by the core.
LimiterOptions limiter_options(py::handle algorithm, py::handle burst, py::handle buckets, py::handle prefix,
                               py::handle on_store_error) {
  LimiterOptions o;
  o.algorithm = parse_algorithm(to_string(algorithm, "algorithm"));
  o.burst = to_optional_int64(burst, "burst");
  o.buckets = to_optional_int64(buckets, "buckets");
  o.prefix = to_optional_string(prefix, "prefix");
  o.on_store_error = parse_on_store_error(to_string(on_store_error, "on_store_error"));
  return o;
}

const char* on_store_error_name(OnStoreError e) {
  switch (e) {
    case OnStoreError::allow:
      return "allow";
    case OnStoreError::deny:
      return "deny";
    case OnStoreError::raise:
      break;
  }
  return "raise";
}

// The core call, with the GIL released around it when the store waits on I/O (Redis). The memory store's calls
// take a few hundred ns: releasing the GIL there only wakes a thread waiting for it, which costs the process more
// CPU than the call itself (1-10 us per call amid 4 busy threads: bench/python/calls.py, "contended").
template <typename Call>
auto store_call(const Limiter& limiter, Call&& call) {
  if (!limiter.store()->traits().blocks_on_io) return call();
  py::gil_scoped_release nogil;
  return call();
}

// A (key, cost) method: both converted with the GIL held, then `call(limiter, key, cost)` through store_call.
template <typename Call>
auto key_cost_method(Call call) {
  return [call](Limiter& self, py::handle key, py::handle cost) {
    const std::string_view k = key_view(key);
    const int64_t c = to_int64(cost, "cost");
    return store_call(self, [&] { return call(self, k, c); });
  };
}

}  // namespace

std::vector<std::string> copy_keys(py::handle keys) {
  if (PyUnicode_Check(keys.ptr()) || PyBytes_Check(keys.ptr()))
    throw py::type_error("keys must be a sequence of keys, not a single key");
  std::vector<std::string> out;
  for (py::handle key : py::iter(keys)) out.emplace_back(key_view(key));
  return out;
}

void bind_decision(py::module_& m) {
  // Equality and the hash cover every field, policy_index included (the core's operator==): two decisions that
  // report different policies of a limiter are different answers, even with the same numbers.
  py::class_<Decision>(m, "Decision", "The answer to one hit or peek; truthy when allowed.")
      .def(py::init([](bool allowed, int64_t limit, int64_t remaining, int64_t reset_after_us, int64_t retry_after_us,
                       int64_t used, int32_t policy_index) {
             return Decision{allowed, limit, remaining, reset_after_us, retry_after_us, used, policy_index};
           }),
           py::kw_only(), py::arg("allowed"), py::arg("limit"), py::arg("remaining"), py::arg("reset_after_us"),
           py::arg("retry_after_us"), py::arg("used"), py::arg("policy_index") = 0)
      .def_readonly("allowed", &Decision::allowed)
      .def_readonly("limit", &Decision::limit)
      .def_readonly("remaining", &Decision::remaining)
      .def_readonly("used", &Decision::used)
      .def_readonly("reset_after_us", &Decision::reset_after_us)
      .def_readonly("retry_after_us", &Decision::retry_after_us)
      .def_readonly("policy_index", &Decision::policy_index,
                    "The policy this decision reports: its index (from 0) in the limiter's policy string.")
      .def_property_readonly("reset_after", [](const Decision& d) { return seconds(d.reset_after_us); })
      .def_property_readonly("retry_after", [](const Decision& d) { return seconds(d.retry_after_us); })
      .def("__bool__", [](const Decision& d) { return d.allowed; })
      .def("__eq__", [](const Decision& a, py::object b) {
        return py::isinstance<Decision>(b) && a == b.cast<const Decision&>();
      })
      .def("__hash__", [](const Decision& d) {
        return py::hash(py::make_tuple(d.allowed, d.limit, d.remaining, d.reset_after_us, d.retry_after_us, d.used,
                                       d.policy_index));
      })
      .def("__repr__", &decision_repr);
}

void bind_store(py::module_& m) {
  py::class_<Policy>(m, "Policy", "One rate of a limiter, validated.")
      .def_property_readonly("algorithm", [](const Policy& p) { return std::string(algorithm_name(p.algorithm)); })
      .def_readonly("limit", &Policy::limit)
      .def_readonly("period_us", &Policy::period_us)
      .def_property_readonly("period", [](const Policy& p) { return seconds(p.period_us); })
      .def_readonly("burst", &Policy::burst)
      .def_readonly("buckets", &Policy::buckets)
      .def_property_readonly("capacity", &Policy::capacity)
      .def("__str__", [](const Policy& p) { return describe(p); })
      .def("__repr__", [](const Policy& p) {
        return "Policy('" + describe(p) + "', algorithm='" + std::string(algorithm_name(p.algorithm)) + "')";
      });

  py::class_<Store, std::shared_ptr<Store>>(m, "Store", "Where the state of every key lives.")
      .def(py::init([](py::handle url, py::handle clock) {
             const std::string text = to_string(url, "url");
             if (!clock.is_none()) return open_store(text, test_clock(clock));
             py::gil_scoped_release nogil;
             return open_store(text);
           }),
           py::arg("url"), py::kw_only(), py::arg("test_clock") = py::none(),
           "Opens the store of `url`. `test_clock` (tests only): a TestClock the store reads the time from, instead "
           "of its monotonic clock (memory) or the server's TIME (Redis).")
      .def_property_readonly("url", &Store::describe, "The store's URL, password masked.")
      .def_property_readonly("prefix", &Store::key_prefix)
      .def_property_readonly(
          "in_process", [](const Store& s) { return !s.traits().blocks_on_io; },
          "True for a store whose calls never wait on I/O (the memory store).")
      .def_property_readonly(
          "shared", [](const Store& s) { return s.traits().shared; },
          "True for a store that other processes share (Redis, Redis Cluster).")
      .def("__repr__", [](const Store& s) { return "Store('" + s.describe() + "')"; });
}

void bind_limiter(py::module_& m) {
  py::class_<Limiter, std::shared_ptr<Limiter>>(m, "Limiter")
      .def(py::init([](py::handle policy, std::shared_ptr<Store> store, py::handle algorithm, py::handle burst,
                       py::handle buckets, py::handle prefix, py::handle on_store_error) {
             if (!store) throw py::type_error("store must be a Store");
             return std::make_shared<Limiter>(to_string(policy, "policy"), std::move(store),
                                              limiter_options(algorithm, burst, buckets, prefix, on_store_error));
           }),
           py::arg("policy"), py::arg("store"), py::kw_only(), py::arg("algorithm") = "fixed_window",
           py::arg("burst") = py::none(), py::arg("buckets") = py::none(), py::arg("prefix") = py::none(),
           py::arg("on_store_error") = "raise")
      .def("hit", key_cost_method([](Limiter& l, std::string_view k, int64_t c) { return l.hit(k, c); }),
           py::arg("key"), py::arg("cost") = 1)
      .def("allow",
           key_cost_method([](Limiter& l, std::string_view k, int64_t c) { return l.hit(k, c).allowed; }),
           py::arg("key"), py::arg("cost") = 1)
      .def("peek", key_cost_method([](Limiter& l, std::string_view k, int64_t c) { return l.peek(k, c); }),
           py::arg("key"), py::arg("cost") = 1)
      .def(
          "reset",
          [](Limiter& self, py::handle key) {
            const std::string_view k = key_view(key);
            store_call(self, [&] { self.reset(k); });
          },
          py::arg("key"))
      .def(
          "hit_many",
          [](Limiter& self, py::handle keys, py::handle cost) {
            const std::vector<std::string> owned = copy_keys(keys);
            const int64_t c = to_int64(cost, "cost");
            return store_call(self, [&] {
              const std::vector<std::string_view> views(owned.begin(), owned.end());
              return self.hit_many(views, c);
            });
          },
          py::arg("keys"), py::arg("cost") = 1)
      .def_property_readonly("policies", &Limiter::policies)
      .def_property_readonly("store", &Limiter::store)
      .def_property_readonly("max_cost", &Limiter::max_cost)
      .def_property_readonly("algorithm",
                             [](const Limiter& l) { return std::string(algorithm_name(l.options().algorithm)); })
      .def_property_readonly("prefix", [](const Limiter& l) { return *l.options().prefix; })
      .def_property_readonly("on_store_error",
                             [](const Limiter& l) { return on_store_error_name(l.options().on_store_error); })
      .def(
          "storage_key",
          [](const Limiter& l, py::handle key, size_t index) {
            if (index >= l.policies().size()) throw py::index_error("policy index out of range");
            return py::bytes(l.storage_key(key_view(key), index));
          },
          py::arg("key"), py::arg("index") = 0);
}

}  // namespace ratewarden::python
