// The answers of asynchronous calls, carried to one event loop: what a binding with an event loop (Python's asyncio,
// Node) needs between the core's callbacks and its loop, as hiredis' adapters need only their event hook.
//
// A call is made with Completion::any_thread and one of on_decision / on_done / on_decisions: its callback (on the
// I/O thread, or on the caller's before the call returns) appends the answer, as plain data, and — the first answer
// since the loop was last armed — calls the binding's wake-up (an eventfd write, a thread-safe function), which
// must be cheap and never block. The loop takes the whole batch at once. Once closed (the loop or its environment
// is gone), an answer goes to the binding's `orphan` instead and nothing wakes anything. The callbacks share the
// queue: it outlives its loop until the last answer has arrived.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ratewarden/decision.hpp"
#include "ratewarden/errors.hpp"
#include "ratewarden/limiter.hpp"

namespace ratewarden {

// Token: what the binding knows a call by (a future, an id); moved, never copied across threads.
template <typename Token>
class AnswerQueue {
 public:
  enum class Kind : uint8_t { decision, decisions, done };
  struct Answer {
    Token token;
    Kind kind = Kind::done;
    Decision decision;               // Kind::decision
    std::vector<Decision> decisions;  // Kind::decisions
    std::optional<ErrorCode> error;  // the call failed: its code and message
    std::string message;
  };

  // `wake`: called under the queue's lock, on any thread. `orphan`: an answer's token after close (may be null).
  AnswerQueue(std::function<void()> wake, void (*orphan)(Token&&)) : wake_(std::move(wake)), orphan_(orphan) {}
  AnswerQueue(const AnswerQueue&) = delete;
  AnswerQueue& operator=(const AnswerQueue&) = delete;

  static DecisionCallback on_decision(std::shared_ptr<AnswerQueue> queue, Token token) {
    return [queue = std::move(queue), token](const Decision* d, const Error* e) mutable {
      Answer a = answer(std::move(token), Kind::decision);
      if (d != nullptr) a.decision = *d;
      queue->push(std::move(a), e);
    };
  }
  static DoneCallback on_done(std::shared_ptr<AnswerQueue> queue, Token token) {
    return [queue = std::move(queue), token](const Error* e) mutable {
      queue->push(answer(std::move(token), Kind::done), e);
    };
  }
  static Limiter::ManyCallback on_decisions(std::shared_ptr<AnswerQueue> queue, Token token) {
    return [queue = std::move(queue), token](const std::vector<Decision>* d, const Error* e) mutable {
      Answer a = answer(std::move(token), Kind::decisions);
      if (d != nullptr) a.decisions = *d;
      queue->push(std::move(a), e);
    };
  }

  // The loop: moves what has arrived into `out` (emptied first; its capacity is reused). `rearm`: the next answer
  // wakes the loop again; else it stays unarmed until rearm_if_empty() (Node: no second wake-up while a batch is
  // delivered, the loop's next turn takes what came meanwhile).
  void take(std::vector<Answer>& out, bool rearm) {
    out.clear();
    std::lock_guard<std::mutex> lock(mu_);
    out.swap(answers_);
    if (rearm) woken_ = false;
  }
  // The loop, after delivering a batch taken unarmed: true when answers are waiting (take them on a later turn);
  // else the next answer wakes the loop.
  bool rearm_if_empty() {
    std::lock_guard<std::mutex> lock(mu_);
    if (!answers_.empty()) return true;
    woken_ = false;
    return false;
  }

  // The loop is gone: what is waiting is handed back (its tokens are the caller's to release), later answers go to
  // the orphan, and nothing wakes anything any more.
  std::vector<Answer> close() {
    std::vector<Answer> waiting;
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
    waiting.swap(answers_);
    return waiting;
  }

 private:
  static Answer answer(Token&& token, Kind kind) {
    Answer a;
    a.token = std::move(token);
    a.kind = kind;
    return a;
  }

  // Never throws (the core's callbacks must not): out of memory, the answer is lost and its call never settles.
  void push(Answer&& answer, const Error* error) noexcept {
    try {
      if (error != nullptr) {
        answer.error = error->code();
        answer.message = error->what();
      }
      std::lock_guard<std::mutex> lock(mu_);
      if (closed_) {
        if (orphan_ != nullptr) orphan_(std::move(answer.token));
        return;
      }
      answers_.push_back(std::move(answer));
      if (!woken_) {
        woken_ = true;
        wake_();
      }
    } catch (...) {
    }
  }

  const std::function<void()> wake_;
  void (*const orphan_)(Token&&);
  std::mutex mu_;
  std::vector<Answer> answers_;
  bool woken_ = false;  // the loop has been told, and has not taken the batch (or not been rearmed) since
  bool closed_ = false;
};

}  // namespace ratewarden
