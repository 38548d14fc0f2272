// A synchronous call as a wait on the asynchronous one (internal).
#pragma once

#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>

#include "io/io_loop.hpp"
#include "ratewarden/errors.hpp"

namespace ratewarden {

// Throws InvalidArgument on the I/O thread, where waiting would wait for the thread itself.
void check_may_wait(const char* what);


// Rethrows a copy of `error` as what it was: StoreError for a store's failure, else Error.
[[noreturn]] void rethrow_copy(const Error& error);

// One waiting caller: complete() from any thread, wait() on the caller's. complete() notifies with the lock held,
// so the waiter cannot return (and free this) before complete() is done with it.
template <typename T>
class SyncWait {
 public:
  void complete(const T* value, const Error* error) {
    std::lock_guard<std::mutex> lock(mu_);
    if (value != nullptr) value_ = *value;
    if (error != nullptr) {
      code_ = error->code();
      message_ = error->what();
    }
    done_ = true;
    cv_.notify_one();
  }
  bool ready() {
    std::lock_guard<std::mutex> lock(mu_);
    return done_;
  }
  T wait() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return done_; });
    if (code_) rethrow_copy(Error(*code_, message_));
    return *value_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::optional<T> value_;
  std::optional<ErrorCode> code_;
  std::string message_;
};

// Makes a network call with `start`, and when this returns `wait` is ready or will be made ready by the I/O thread:
// the call ran on this thread if the I/O thread was asleep (IoLoop::drive: no hand-off between threads).
template <typename T, typename Start>
void run_and_wait(SyncWait<T>& wait, Start start) {
  if (!IoLoop::current().drive(start, [&wait] { return wait.ready(); })) start();
}

}  // namespace ratewarden
