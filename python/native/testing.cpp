// Test only: stores whose clock is a shared integer that the test sets, for the conformance vectors. Not part of the
// public API (ratewarden does not re-export it). Reading the clock is one atomic load, without the GIL.
#include <atomic>
#include <memory>
#include <string>

#include "bindings.hpp"
#include "convert.hpp"
#include "ratewarden/memory_store.hpp"
#include "ratewarden/redis_store.hpp"

namespace ratewarden::python {
namespace {

class ManualClock {
 public:
  explicit ManualClock(int64_t start_us) : now_(std::make_shared<std::atomic<int64_t>>(start_us)) {}
  int64_t now() const { return now_->load(); }
  void set(int64_t us) { now_->store(us); }
  Clock clock() const {
    return [now = now_] { return now->load(); };
  }

 private:
  std::shared_ptr<std::atomic<int64_t>> now_;
};

}  // namespace

void bind_testing(py::module_& m) {
  py::class_<ManualClock>(m, "ManualClock", "Test only: a clock that moves when `now_us` is set.")
      .def(py::init([](py::handle start_us) { return ManualClock(to_int64(start_us, "start_us")); }),
           py::arg("start_us"))
      .def_property(
          "now_us", &ManualClock::now, [](ManualClock& c, py::handle us) { c.set(to_int64(us, "now_us")); })
      .def(
          "memory_store",
          [](const ManualClock& c) {
            MemoryStoreOptions options;
            options.clock = c.clock();
            return std::shared_ptr<Store>(std::make_shared<MemoryStore>(options));
          },
          "A new memory store on this clock.")
      .def(
          "redis_store",
          [](const ManualClock& c, py::handle host, py::handle port) {
            RedisStoreOptions options;
            options.host = to_string(host, "host");
            options.port = static_cast<int>(to_int64(port, "port"));
            options.clock = c.clock();
            return std::shared_ptr<Store>(std::make_shared<RedisStore>(options));
          },
          py::arg("host"), py::arg("port"), "A new Redis store that passes this clock's time to the scripts.");
}

}  // namespace ratewarden::python
