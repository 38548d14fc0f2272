#include "callback_thread.hpp"

#include <pthread.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "fork_guard.hpp"
#include "per_process.hpp"

namespace ratewarden {
namespace {

class CallbackThread {
 public:
  CallbackThread() {
    std::thread([this] { run(); }).detach();  // lives as long as the process
  }

  void post(std::function<void()> task) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      tasks_.push_back(std::move(task));
    }
    cv_.notify_one();
  }

 private:
  void run() {
    pthread_setname_np(pthread_self(), "ratewarden-cb");
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      cv_.wait(lock, [this] { return !tasks_.empty(); });
      std::deque<std::function<void()>> batch;
      batch.swap(tasks_);
      lock.unlock();
      for (auto& task : batch) task();
      lock.lock();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
};

}  // namespace

void run_on_callback_thread(std::function<void()> task) {
  // One per process, never destroyed (its thread outlives static destruction): a child's inherited one has no
  // thread, and its lock may be held by a thread of the parent.
  static auto* threads = new PerProcess<CallbackThread>;
  CallbackThread* t = &threads->get([] {
    watch_forks();
    return new CallbackThread();
  });
  t->post(std::move(task));
}

}  // namespace ratewarden
