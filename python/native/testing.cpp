// Test only: stores whose clock is a shared integer that the test sets, for the conformance vectors. Not part of the
// public API (ratewarden does not re-export it). Reading the clock is one atomic load, without the GIL.
#include <atomic>
#include <memory>
#include <string>

#include "bindings.hpp"
#include "convert.hpp"
#include "ratewarden/store.hpp"

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
          "store",
          [](const ManualClock& c, py::handle url) { return open_store(to_string(url, "url"), c.clock()); },
          py::arg("url"),
          "A new store on this clock (any store URL): the memory store's time, or the time the Redis scripts use "
          "instead of the server's TIME.");
}

}  // namespace ratewarden::python
