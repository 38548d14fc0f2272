// Policy, Store and Limiter: argument conversion around the core's calls, the GIL released around each call to a
// store that waits on I/O. hit, allow and peek are in fast_calls.cpp, the Decision in decision.cpp.
#include <string>
#include <vector>

#include <pybind11/stl.h>

#include "bindings.hpp"
#include "convert.hpp"
#include "ratewarden/errors.hpp"
#include "ratewarden/policy.hpp"

namespace ratewarden::python {
namespace {

double seconds(int64_t us) { return static_cast<double>(us) / 1e6; }

// Options the constructor takes by keyword; values are converted here, checked by the core.
LimiterOptions limiter_options(py::handle algorithm, py::handle burst, py::handle buckets, py::handle prefix,
                               py::handle on_store_error, py::handle name) {
  LimiterOptions o;
  o.algorithm = parse_algorithm(to_string(algorithm, "algorithm"));
  o.burst = to_optional_int64(burst, "burst");
  o.buckets = to_optional_int64(buckets, "buckets");
  o.prefix = to_optional_string(prefix, "prefix");
  o.on_store_error = parse_on_store_error(to_string(on_store_error, "on_store_error"));
  o.name = to_optional_string(name, "name");
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

}  // namespace

std::vector<std::string> copy_keys(py::handle keys) {
  if (PyUnicode_Check(keys.ptr()) || PyBytes_Check(keys.ptr()))
    throw py::type_error("keys must be a sequence of keys, not a single key");
  std::vector<std::string> out;
  for (py::handle key : py::iter(keys)) out.emplace_back(key_view(key));
  return out;
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
             return without_gil([&] { return open_store(text); });
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
      .def("stats", &Store::stats,
           "What the store can tell of itself now, without a round trip: a StoreStats (its keys: zeros for a "
           "network store, whose keys are on the server; its calls, circuits and connections: zeros for the memory "
           "store).")
      .def("__repr__", [](const Store& s) { return "Store('" + s.describe() + "')"; });

  m.def(
      "open_shared_store",
      [](py::handle url) {
        const std::string text = to_string(url, "url");
        return without_gil([&] { return open_shared_store(text); });
      },
      py::arg("url"),
      "The store of `url` as this process shares it (the core's open_shared_store): one Store per shared URL while "
      "something holds it; a new store for memory://.");
}

void bind_limiter(py::module_& m) {
  m.def(
      "check_prefix", [](py::handle prefix) { validate_key_prefix(to_string(prefix, "prefix")); }, py::arg("prefix"),
      "Checks a key prefix as Limiter(..., prefix=...) and a store URL's ?prefix= do (an InvalidArgumentError).");
  m.def(
      "check_policy",
      [](py::handle policy, py::handle algorithm, py::handle burst, py::handle buckets) {
        // What Limiter's constructor checks of a policy, without making a limiter: a limiter's name is counted
        // (limiter_stats(), the metrics) from the moment it is made, so one made only to check a policy would leave
        // a series of zeros behind. The one rule that is Limiter's own, no rate twice, is checked here too.
        const std::string text = to_string(policy, "policy");
        std::vector<Policy> policies =
            make_policies(parse_rates(text), PolicyOptions{parse_algorithm(to_string(algorithm, "algorithm")),
                                                           to_optional_int64(burst, "burst"),
                                                           to_optional_int64(buckets, "buckets")});
        for (size_t i = 0; i < policies.size(); ++i)
          for (size_t j = 0; j < i; ++j)
            if (storage_name(policies[i]) == storage_name(policies[j]))
              throw InvalidArgument("the rate " + describe(policies[i]) + " appears twice in \"" + text.substr(0, 200) +
                                    "\"");
        return policies;
      },
      py::arg("policy"), py::kw_only(), py::arg("algorithm") = "fixed_window", py::arg("burst") = py::none(),
      py::arg("buckets") = py::none(),
      "The policies of `policy`, checked as Limiter(policy, ...) checks them (an InvalidArgumentError), without "
      "making a limiter (whose name would count from then on).");

  py::class_<Limiter, std::shared_ptr<Limiter>> cls(m, "Limiter");
  add_fast_calls(cls);
  cls
      .def(py::init([](py::handle policy, std::shared_ptr<Store> store, py::handle algorithm, py::handle burst,
                       py::handle buckets, py::handle prefix, py::handle on_store_error, py::handle name) {
             if (!store) throw py::type_error("store must be a Store");
             return std::make_shared<Limiter>(
                 to_string(policy, "policy"), std::move(store),
                 limiter_options(algorithm, burst, buckets, prefix, on_store_error, name));
           }),
           py::arg("policy"), py::arg("store"), py::kw_only(), py::arg("algorithm") = "fixed_window",
           py::arg("burst") = py::none(), py::arg("buckets") = py::none(), py::arg("prefix") = py::none(),
           py::arg("on_store_error") = "raise", py::arg("name") = py::none())
      .def(
          "reset",
          [](Limiter& self, py::handle key) {
            const std::string_view k = key_view(key);
            store_call(self, [&] { self.reset(k); });
          },
          py::arg("key"))
      .def(
          "reserve",
          [](Limiter& self, py::handle key, py::handle cost, py::handle max_wait) {
            const std::string_view k = key_view(key);
            const int64_t c = to_int64(cost, "cost");
            const int64_t wait = to_max_wait_us(max_wait);
            return store_call(self, [&] { return self.reserve(k, c, wait); });
          },
          py::arg("key"), py::arg("cost") = 1, py::arg("max_wait") = py::none(),
          "Charges a hit at the earliest instant, no later than max_wait seconds ahead (None: no bound), at which "
          "every policy allows it (gcra and token_bucket): an allowed Decision whose `wait` says how long to wait "
          "before acting, or a denial when the wait would exceed max_wait (nothing charged).")
      .def(
          "cancel",
          [](Limiter& self, py::handle key, py::handle reservation, py::handle cost) {
            const std::string_view k = key_view(key);
            const Decision* slot = decision_of(reservation.ptr());
            if (slot == nullptr) throw py::type_error("reservation must be the Decision reserve returned");
            const int64_t c = to_int64(cost, "cost");
            const Decision copy = *slot;
            return store_call(self, [&] { return self.cancel(k, c, copy); });
          },
          py::arg("key"), py::arg("reservation"), py::arg("cost") = 1,
          "Gives the slot of `reservation` back: True when it was, which it is when nothing was charged on the key "
          "after it; otherwise the slot stays spent.")
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
      .def_property_readonly("name", &Limiter::name,
                             "What its figures are counted under: the name given, else the policy string.")
      .def("stats", &Limiter::stats, "This limiter's decisions so far: a LimiterStats.")
      .def("_count_fallback", &Limiter::count_fallback, py::arg("allowed"), py::arg("cost") = 1,
           "For the HTTP adapters, which apply on_store_error themselves: counts a decision they made without the "
           "store in this limiter's figures, as a fallback.")
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
          [](const Limiter& l, py::handle key, int64_t index) {
            const auto n = static_cast<int64_t>(l.policies().size());
            if (index < 0 || index >= n)
              throw py::index_error("policy index out of range: " + std::to_string(index) + ", not 0 to " +
                                    std::to_string(n - 1));
            return py::bytes(l.storage_key(key_view(key), static_cast<size_t>(index)));
          },
          py::arg("key"), py::arg("index") = 0);
}

}  // namespace ratewarden::python
