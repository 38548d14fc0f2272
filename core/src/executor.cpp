#include "executor.hpp"

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

namespace ratewarden {
namespace {

// Threads block on store I/O, so the pool grows to keep calls in flight (the Redis store pipelines them); the cap
// keeps a flood of calls from turning into a flood of threads.
constexpr size_t kMaxThreads = 64;

class Pool {
 public:
  ~Pool() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }

  void submit(std::function<void()> task) {
    std::lock_guard<std::mutex> lock(mu_);
    tasks_.push_back(std::move(task));
    if (idle_ == 0 && threads_.size() < kMaxThreads)
      threads_.emplace_back([this] { work(); });
    else
      cv_.notify_one();
  }

 private:
  void work() {
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      ++idle_;
      cv_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
      --idle_;
      if (tasks_.empty()) return;  // stopping, and nothing left to run
      std::function<void()> task = std::move(tasks_.front());
      tasks_.pop_front();
      lock.unlock();
      task();
      lock.lock();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
  std::vector<std::thread> threads_;
  size_t idle_ = 0;
  bool stopping_ = false;
};

}  // namespace

void run_on_pool(std::function<void()> task) {
  static Pool pool;
  pool.submit(std::move(task));
}

}  // namespace ratewarden
