// The library's I/O thread: one epoll loop per process that drives every network connection (internal).
//
// Callers never wait on a socket: they post work to the loop and are called back. The loop thread is the only one
// that touches connections, so they need no locks. It starts on first use (the first call to a network store) and
// lives as long as the process; a forked child gets a loop of its own on its first call (fork_guard.hpp).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

namespace ratewarden {

// Something the loop watches: a socket's readiness.
class IoHandler {
 public:
  virtual ~IoHandler() = default;
  virtual void on_io(uint32_t events) = 0;  // EPOLLIN / EPOLLOUT / EPOLLERR / EPOLLHUP
};

// Something with deadlines: asked for its earliest one before the loop sleeps, told the time when it has passed.
class Deadlines {
 public:
  virtual ~Deadlines() = default;
  virtual int64_t next_deadline_us() const = 0;  // INT64_MAX for none
  virtual void expire(int64_t now_us) = 0;
};

// Something that batches output: flushed once per turn of the loop, after every task and event of the turn.
class Flushable {
 public:
  virtual ~Flushable() = default;
  virtual void flush() = 0;
};

class IoLoop {
 public:
  using Task = std::function<void()>;

  // The loop of this process, started on first use.
  static IoLoop& current();
  // Whether the calling thread is a loop thread (of this process or, in a child, of the one inherited).
  static bool on_loop_thread();

  // Thread-safe: runs the tasks on the loop thread, in order, soon.
  void post(Task task);
  void post(std::vector<Task>& tasks);

  // Loop thread only.
  void watch(int fd, uint32_t events, IoHandler* handler);  // add or change
  void unwatch(int fd);
  void add_deadlines(Deadlines* d);
  void remove_deadlines(Deadlines* d);
  void mark_dirty(Flushable* f);
  void unmark_dirty(Flushable* f);
  void run_at(int64_t when_us, Task task);  // a one-shot timer
  // Runs at the end of the turn, when no event of the turn can still name a handler: where handlers are deleted.
  void defer(Task task);
  int64_t now_us() const { return now_us_; }  // the loop's clock (monotonic, µs), read once per turn

  IoLoop(const IoLoop&) = delete;
  IoLoop& operator=(const IoLoop&) = delete;

 private:
  IoLoop();
  void run();
  void turn();
  int64_t next_deadline() const;

  int epoll_fd_ = -1;
  int wake_fd_ = -1;
  std::thread thread_;

  std::mutex mu_;
  std::vector<Task> posted_;
  bool awake_ = true;  // the loop is not (about to be) asleep in epoll_wait: posting needs no wake-up

  int64_t now_us_ = 0;
  std::vector<Deadlines*> deadlines_;
  std::vector<Flushable*> dirty_;
  std::multimap<int64_t, Task> timers_;
  std::vector<Task> deferred_;
};

}  // namespace ratewarden
