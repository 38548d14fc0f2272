// The answers of the core's asynchronous calls, carried to the event loop of one Node environment.
//
// Every asynchronous call of the addon is one call of the core's public async API with Completion::any_thread. Its
// callback runs on the library's I/O thread (or, for a call that fails at once, on the loop thread before the call
// returns) and does one thing: append the answer, as plain C++ data, to this queue — a vector under a mutex — and,
// when the queue was empty and the loop not yet told, wake the loop through ONE thread-safe function. On the loop,
// drain() hands the whole batch to one JS function (node/lib/calls.js) in one call: a burst of answers costs one
// wake-up and one call.
//
// Fairness: answers that arrive while a batch is being delivered do not wake the loop again (Node would run the
// thread-safe function again at once, up to 1000 times, before any timer or socket of the loop's own: with 10,000
// calls in flight a 10 ms timer was seen 650 ms late). Instead, after delivering, drain() asks JS for a
// setImmediate that drains the rest: at most one batch per turn of the event loop, and every other callback of the
// loop runs in between.
//
// Calls are known to JS by an integer id: C++ holds no JS value per call. So an environment that ends with calls in
// flight has nothing to release for them: their answers are dropped as plain data.
//
// Teardown, safe by construction:
//  - The environment's cleanup hook (registered after the thread-safe function is created, so it runs before Node
//    closes that function) closes the queue under its lock. From then on an answer is dropped without any N-API
//    call, and nothing ever calls the thread-safe function again.
//  - The state the I/O thread touches (the Queue) is shared by every callback in flight: it outlives the environment
//    until the last answer has arrived.
//  - No C++ exception leaves drain() or the hook: they use the C API, check statuses and give up quietly when the
//    environment cannot run JS any more (a worker being terminated).
//  - The thread-safe function is ref'd only while calls are in flight: it never keeps the process alive otherwise.
#pragma once

#include <node_api.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ratewarden/answer_queue.hpp"
#include "ratewarden/limiter.hpp"

namespace rwnode {

class Completions {
 public:
  // On the loop thread, when the addon is loaded; throws Napi::Error when N-API refuses.
  explicit Completions(napi_env env);
  ~Completions();
  Completions(const Completions&) = delete;
  Completions& operator=(const Completions&) = delete;

  // Loop thread. The JS function that receives every batch: handler(values: Float64Array, extras: Array | null),
  // RECORD numbers per answer (id, kind, then the kDecisionFields numbers of a decision); extras[i], for answer i,
  // is its Error (kind error) or a Float64Array of kDecisionFields numbers per decision (kind decisions). `later()` must arrange for
  // drain_now() to be called on a later turn of the loop (setImmediate).
  void set_handler(napi_env env, napi_value handler, napi_value later);
  // Loop thread: delivers what has arrived (from `later`'s setImmediate).
  void drain_now(napi_env env) noexcept;

  // The core's callbacks for the call known to JS as `id`: any thread, never throw, never block.
  // `kind`: kDecision, or kReservation for reserve's answers (JS reads their wait and ticket too).
  ratewarden::DecisionCallback on_decision(uint32_t id, uint8_t kind = 0) const;
  ratewarden::DoneCallback on_done(uint32_t id) const;
  ratewarden::Limiter::ManyCallback on_decisions(uint32_t id) const;

  // Loop thread, after the core accepted a call (not when it threw): the loop stays alive until its answer.
  void started(napi_env env);

  enum Kind : uint8_t { kDecision = 0, kError = 1, kDecisions = 2, kDone = 3, kReservation = 4 };

 private:
  // A call as JS knows it: its id, and for a decision, kDecision or kReservation.
  struct Call {
    uint32_t id;
    uint8_t kind;
  };
  // What the I/O thread touches: the core's queue of answers (ratewarden/answer_queue.hpp), woken through the
  // thread-safe function.
  using Queue = ratewarden::AnswerQueue<Call>;
  using Answer = Queue::Answer;

  static void drain(napi_env env, napi_value, void* context, void*) noexcept;
  static void close(void* queue) noexcept;
  void deliver(napi_env env, std::vector<Answer>& batch) noexcept;
  bool call(napi_env env, napi_ref function, size_t argc, napi_value* argv) noexcept;

  napi_env env_;
  napi_threadsafe_function wake_ = nullptr;
  std::shared_ptr<Queue> queue_;
  std::vector<Answer> batch_;  // loop thread: the drained answers (its capacity reused)
  size_t in_flight_ = 0;       // loop thread: calls started and not yet drained
  napi_ref handler_ = nullptr;
  napi_ref later_ = nullptr;
};

}  // namespace rwnode
