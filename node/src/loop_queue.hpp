// Runs jobs on the core's thread pool and finishes them on the event loop.
//
// One thread-safe function per addon instance carries every completion: a pool thread queues its finished job and
// wakes the loop only if the queue was empty, so a burst of completions costs one wake-up. The loop stays alive
// (the function is ref'd) exactly while jobs are in flight.
#pragma once

#include <napi.h>

#include <memory>
#include <mutex>
#include <vector>

namespace rwnode {

class Job {
 public:
  virtual ~Job() = default;
  // On a pool thread: the core call. Must not touch N-API.
  virtual void run() = 0;
  // On the loop thread, in a handle scope: hand the result to JS.
  virtual void complete(Napi::Env env) = 0;
  // The addon is being torn down: drop JS references without calling N-API.
  virtual void abandon() = 0;
};

class LoopQueue {
 public:
  explicit LoopQueue(Napi::Env env);
  ~LoopQueue();
  LoopQueue(const LoopQueue&) = delete;
  LoopQueue& operator=(const LoopQueue&) = delete;

  // On the loop thread.
  void submit(std::unique_ptr<Job> job);

 private:
  // What pool threads touch; it outlives the addon instance while jobs still run.
  struct Finished {
    std::mutex mu;
    std::vector<std::unique_ptr<Job>> jobs;
    bool closed = false;
    napi_threadsafe_function wake = nullptr;
    void push(std::unique_ptr<Job> job);
  };

  static void drain(napi_env env, napi_value, void* context, void*);
  // From the environment's cleanup, before Node tears the thread-safe function down: jobs that finish later are
  // dropped instead of calling it.
  static void close(void* finished);

  napi_env env_;
  std::shared_ptr<Finished> finished_;
  size_t in_flight_ = 0;
};

}  // namespace rwnode
