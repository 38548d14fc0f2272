// TestClock: a clock that moves only when a test sets it, for stores made with Store(url, test_clock=...). The same
// name and shape as Node's TestClock. Reading it is one atomic load, without the GIL.
#include <atomic>
#include <memory>

#include "bindings.hpp"
#include "convert.hpp"

namespace ratewarden::python {
namespace {

class TestClock {
 public:
  explicit TestClock(int64_t start_us) : now_(std::make_shared<std::atomic<int64_t>>(start_us)) {}
  int64_t now() const { return now_->load(); }
  void set(int64_t us) { now_->store(us); }
  Clock clock() const {
    return [now = now_] { return now->load(); };
  }

 private:
  std::shared_ptr<std::atomic<int64_t>> now_;
};

}  // namespace

Clock test_clock(py::handle clock) {
  if (!py::isinstance<TestClock>(clock))
    throw py::type_error(std::string("test_clock must be a TestClock, not ") + Py_TYPE(clock.ptr())->tp_name);
  return clock.cast<const TestClock&>().clock();
}

void bind_test_clock(py::module_& m) {
  py::class_<TestClock>(m, "TestClock",
                        "Tests only: a clock in microseconds that moves when `now_us` is set, for "
                        "Store(url, test_clock=clock).")
      .def(py::init([](py::handle start_us) { return TestClock(to_int64(start_us, "start_us")); }),
           py::arg("start_us"))
      .def_property(
          "now_us", &TestClock::now, [](TestClock& c, py::handle us) { c.set(to_int64(us, "now_us")); });
}

}  // namespace ratewarden::python
