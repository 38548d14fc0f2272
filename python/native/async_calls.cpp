// The asyncio side of the core's asynchronous calls. Each event loop has one Completions: a call hands the core a
// callback (Completion::any_thread) that runs on the core's I/O thread, never takes the GIL, and only queues the
// answer and wakes the loop through an eventfd (the core's AnswerQueue, Node's too); the loop's reader (drain) then
// settles the futures on the loop's thread. So a call in flight costs a queue entry and a future — no thread, no GIL
// hand-off on the I/O thread.
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
#include "ratewarden/answer_queue.hpp"
#include "convert.hpp"
#include "errors.hpp"

namespace ratewarden::python {
namespace {

using Queue = AnswerQueue<PyObject*>;  // a call's token: a strong reference to its future, taken with the GIL
using Answer = Queue::Answer;

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

void orphan(PyObject*&& future) {
  Orphans& o = orphans();
  std::lock_guard<std::mutex> lock(o.mu);
  o.futures.push_back(future);
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

// The loop's eventfd: closed with the loop (its Completions), even with calls in flight. Safe because the queue
// wakes the loop only under its lock and never once closed, and ~Completions closes the queue first: no write can
// reach a number the process has since reused.
class EventFd {
 public:
  EventFd() : fd_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
    if (fd_ < 0) throw std::runtime_error(std::string("eventfd: ") + std::strerror(errno));
  }
  ~EventFd() { ::close(fd_); }
  EventFd(const EventFd&) = delete;
  EventFd& operator=(const EventFd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

class Completions {
 public:
  Completions() {
    release_orphans();
    queue_ = std::make_shared<Queue>(
        [fd = fd_.get()] {
          const uint64_t one = 1;
          ssize_t n = ::write(fd, &one, sizeof one);
          (void)n;  // the eventfd is already readable if this fails
        },
        &orphan);
  }
  // With the GIL, once the loop's reader is gone (the loop closed: only its reader holds a Completions, see
  // ratewarden._limiter._completions). The answers not drained are dropped (a closed loop's futures cannot be
  // settled), those that arrive later are orphans; then fd_ closes (members go after the body).
  ~Completions() {
    for (Answer& a : queue_->close()) Py_DECREF(a.token);
  }
  Completions(const Completions&) = delete;
  Completions& operator=(const Completions&) = delete;

  int fileno() const { return fd_.get(); }

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
    limiter.reset_async(key_view(key), Queue::on_done(queue_, future.ptr()), Completion::any_thread);
    future.release();
  }

  void hit_many(Limiter& limiter, const std::vector<std::string>& keys, py::handle cost, py::object future) {
    const int64_t c = to_int64(cost, "cost");
    const std::vector<std::string_view> views(keys.begin(), keys.end());
    limiter.hit_many_async(views, c, Queue::on_decisions(queue_, future.ptr()), Completion::any_thread);
    future.release();
  }

  // The loop's reader: settles every answer that arrived. A cancelled future is left as it is.
  void drain() {
    uint64_t count;
    ssize_t n = ::read(fd_.get(), &count, sizeof count);
    (void)n;
    std::vector<Answer> answers;
    queue_->take(answers, true);
    settle(answers);
    release_orphans();
  }

 private:
  DecisionCallback decision_callback(const py::object& future) { return Queue::on_decision(queue_, future.ptr()); }

  static void settle(std::vector<Answer>& answers) {
    for (Answer& a : answers) {
      py::object future = py::reinterpret_steal<py::object>(a.token);
      try {
        if (future.attr("done")().cast<bool>()) continue;
        if (a.error) {
          future.attr("set_exception")(to_python_error(Error(*a.error, a.message)));
        } else if (a.kind == Queue::Kind::decision) {
          future.attr("set_result")(a.decision);
        } else if (a.kind == Queue::Kind::decisions) {
          future.attr("set_result")(a.decisions);
        } else {
          future.attr("set_result")(py::none());
        }
      } catch (py::error_already_set& e) {
        e.discard_as_unraisable("ratewarden: settling an asynchronous call");
      }
    }
  }

  EventFd fd_;  // before queue_: the queue's wake-up writes to it
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
