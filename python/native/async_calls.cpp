// The asyncio side of the core's asynchronous calls. Each event loop has one Completions: a call hands the core a
// callback (Completion::any_thread) that runs on the core's I/O thread, never takes the GIL, and only queues the
// answer and wakes the loop through an eventfd; the loop's reader (drain) then settles the futures on the loop's
// thread. So a call in flight costs a queue entry and a future — no thread, no GIL hand-off on the I/O thread.
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <pybind11/stl.h>

#include "bindings.hpp"
#include "convert.hpp"
#include "errors.hpp"

namespace ratewarden::python {
namespace {

enum class Kind { decision, decisions, none };

// One answer waiting for the loop. `future` is a strong reference taken with the GIL, dropped in drain().
struct Answer {
  PyObject* future;
  Kind kind;
  Decision decision;
  std::vector<Decision> decisions;
  std::optional<ErrorCode> code;
  std::string message;
};

// The futures of answers that came after their loop was closed (asyncio.run ending with calls in flight): the I/O
// thread cannot release them without the GIL, so the next Completions made or drained does (release_orphans). Never
// destroyed: the I/O thread may still push into it while the interpreter exits.
struct Orphans {
  std::mutex mu;
  std::vector<PyObject*> futures;
};
Orphans& orphans() {
  static auto* o = new Orphans;
  return *o;
}

// With the GIL.
void release_orphans() {
  std::vector<PyObject*> futures;
  {
    Orphans& o = orphans();
    std::lock_guard<std::mutex> lock(o.mu);
    if (o.futures.empty()) return;
    futures.swap(o.futures);
  }
  for (PyObject* f : futures) Py_DECREF(f);
}

// What the I/O thread touches; it outlives the Completions while answers are still on their way.
struct Queue {
  std::mutex mu;
  std::vector<Answer> answers;
  bool closed = false;  // the Completions is gone: answers go to the orphans
  int fd = -1;
  ~Queue() {
    if (fd >= 0) ::close(fd);
  }
  void push(Answer answer) {
    bool wake;
    {
      std::lock_guard<std::mutex> lock(mu);
      if (closed) {
        Orphans& o = orphans();
        std::lock_guard<std::mutex> orphans_lock(o.mu);
        o.futures.push_back(answer.future);
        return;
      }
      wake = answers.empty();
      answers.push_back(std::move(answer));
    }
    if (wake) {
      const uint64_t one = 1;
      ssize_t n = ::write(fd, &one, sizeof one);
      (void)n;  // the eventfd is already readable if this fails
    }
  }
};

class Completions {
 public:
  Completions() : queue_(std::make_shared<Queue>()) {
    release_orphans();
    queue_->fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (queue_->fd < 0) throw std::runtime_error(std::string("eventfd: ") + std::strerror(errno));
  }
  // With the GIL, once the loop's reader is gone (the loop closed: only its reader holds a Completions, see
  // ratewarden._limiter._completions). The answers not drained are dropped (a closed loop's futures cannot be
  // settled), those that arrive later are orphans; the eventfd closes with the last call in flight.
  ~Completions() {
    std::vector<Answer> answers;
    {
      std::lock_guard<std::mutex> lock(queue_->mu);
      queue_->closed = true;
      answers.swap(queue_->answers);
    }
    for (Answer& a : answers) Py_DECREF(a.future);
  }

  int fileno() const { return queue_->fd; }

  // The decision when the store answers at once (a hybrid mode's local knowledge: the future is left unused), else
  // None and the future gets the answer.
  py::object hit(Limiter& limiter, py::handle key, py::handle cost, py::object future) {
    const std::string_view k = key_view(key);
    const int64_t c = to_int64(cost, "cost");
    Decision now;
    if (limiter.store()->traits().answers_now && limiter.hit_now(k, c, now)) return py::cast(now);
    limiter.hit_async(k, c, decision_callback(future), Completion::any_thread);
    future.release();
    return py::none();
  }

  py::object peek(Limiter& limiter, py::handle key, py::handle cost, py::object future) {
    const std::string_view k = key_view(key);
    const int64_t c = to_int64(cost, "cost");
    Decision now;
    if (limiter.store()->traits().answers_now && limiter.peek_now(k, c, now)) return py::cast(now);
    limiter.peek_async(k, c, decision_callback(future), Completion::any_thread);
    future.release();
    return py::none();
  }

  void refund(Limiter& limiter, py::handle key, py::handle cost, py::object future) {
    limiter.refund_async(key_view(key), to_int64(cost, "cost"), decision_callback(future), Completion::any_thread);
    future.release();
  }

  void reserve(Limiter& limiter, py::handle key, py::handle cost, py::handle max_wait, py::object future) {
    const std::string_view k = key_view(key);
    limiter.reserve_async(k, to_int64(cost, "cost"), to_max_wait_us(max_wait), decision_callback(future),
                          Completion::any_thread);
    future.release();
  }

  // The future gets a Decision whose `allowed` says whether the slot was given back.
  void cancel(Limiter& limiter, py::handle key, py::handle cost, py::handle reservation, py::object future) {
    const std::string_view k = key_view(key);
    const Decision* slot = decision_of(reservation.ptr());
    if (slot == nullptr) throw py::type_error("reservation must be the Decision reserve returned");
    limiter.cancel_async(k, to_int64(cost, "cost"), *slot, decision_callback(future), Completion::any_thread);
    future.release();
  }

  void reset(Limiter& limiter, py::handle key, py::object future) {
    const std::string_view k = key_view(key);
    std::shared_ptr<Queue> queue = queue_;
    PyObject* f = future.ptr();
    limiter.reset_async(
        k,
        [queue, f](const Error* e) {
          Answer a{f, Kind::none, {}, {}, {}, {}};
          if (e != nullptr) a.code = e->code(), a.message = e->what();
          queue->push(std::move(a));
        },
        Completion::any_thread);
    future.release();
  }

  void hit_many(Limiter& limiter, const std::vector<std::string>& keys, py::handle cost, py::object future) {
    const int64_t c = to_int64(cost, "cost");
    const std::vector<std::string_view> views(keys.begin(), keys.end());
    std::shared_ptr<Queue> queue = queue_;
    PyObject* f = future.ptr();
    limiter.hit_many_async(
        views, c,
        [queue, f](const std::vector<Decision>* d, const Error* e) {
          Answer a{f, Kind::decisions, {}, {}, {}, {}};
          if (d != nullptr) a.decisions = *d;
          if (e != nullptr) a.code = e->code(), a.message = e->what();
          queue->push(std::move(a));
        },
        Completion::any_thread);
    future.release();
  }

  // The loop's reader: settles every answer that arrived. A cancelled future is left as it is.
  void drain() {
    uint64_t count;
    ssize_t n = ::read(queue_->fd, &count, sizeof count);
    (void)n;
    std::vector<Answer> answers;
    {
      std::lock_guard<std::mutex> lock(queue_->mu);
      answers.swap(queue_->answers);
    }
    settle(answers);
    release_orphans();
  }

 private:
  DecisionCallback decision_callback(const py::object& future) {
    std::shared_ptr<Queue> queue = queue_;
    PyObject* f = future.ptr();
    return [queue, f](const Decision* d, const Error* e) {
      Answer a{f, Kind::decision, {}, {}, {}, {}};
      if (d != nullptr) a.decision = *d;
      if (e != nullptr) a.code = e->code(), a.message = e->what();
      queue->push(std::move(a));
    };
  }

  static void settle(std::vector<Answer>& answers) {
    for (Answer& a : answers) {
      py::object future = py::reinterpret_steal<py::object>(a.future);
      try {
        if (future.attr("done")().cast<bool>()) continue;
        if (a.code) {
          future.attr("set_exception")(to_python_error(Error(*a.code, a.message)));
        } else if (a.kind == Kind::decision) {
          future.attr("set_result")(a.decision);
        } else if (a.kind == Kind::decisions) {
          future.attr("set_result")(a.decisions);
        } else {
          future.attr("set_result")(py::none());
        }
      } catch (py::error_already_set& e) {
        e.discard_as_unraisable("ratewarden: settling an asynchronous call");
      }
    }
  }

  std::shared_ptr<Queue> queue_;
};

}  // namespace

void bind_async(py::module_& m) {
  py::class_<Completions>(m, "Completions",
                          "The answers of one event loop's asynchronous calls (ratewarden.Limiter.ahit & co).")
      .def(py::init<>())
      .def("fileno", &Completions::fileno)
      .def("drain", &Completions::drain)
      .def("hit", &Completions::hit, py::arg("limiter"), py::arg("key"), py::arg("cost"), py::arg("future"))
      .def("peek", &Completions::peek, py::arg("limiter"), py::arg("key"), py::arg("cost"), py::arg("future"))
      .def("reset", &Completions::reset, py::arg("limiter"), py::arg("key"), py::arg("future"))
      .def("refund", &Completions::refund, py::arg("limiter"), py::arg("key"), py::arg("cost"), py::arg("future"))
      .def("reserve", &Completions::reserve, py::arg("limiter"), py::arg("key"), py::arg("cost"),
           py::arg("max_wait"), py::arg("future"))
      .def("cancel", &Completions::cancel, py::arg("limiter"), py::arg("key"), py::arg("cost"),
           py::arg("reservation"), py::arg("future"))
      .def(
          "hit_many",
          [](Completions& self, Limiter& limiter, py::handle keys, py::handle cost, py::object future) {
            self.hit_many(limiter, copy_keys(keys), cost, std::move(future));
          },
          py::arg("limiter"), py::arg("keys"), py::arg("cost"), py::arg("future"));
}

}  // namespace ratewarden::python
