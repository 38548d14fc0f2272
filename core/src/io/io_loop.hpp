// The library's I/O thread: one epoll loop per process that drives every network connection (internal).
//
// Callers never wait on a socket: they post work to the loop and are called back. Only the thread that holds the
// loop's token runs a turn and touches connections: the I/O thread, or a synchronous caller that found it asleep. It starts on first use (the first call to a network store) and
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
  // Whether the calling thread is running the loop: the I/O thread, or a caller driving it (drive()).
  static bool on_loop_thread();

  // Thread-safe: runs the task on the loop thread, after the ones posted before it, soon.
  void post(Task task);
  // Thread-safe: wakes the I/O thread if posted work waits for it (release_io_wakeups, limiter.hpp).
  void wake_for_posted();

  // For a synchronous call: if the I/O thread is asleep (no turn under way), the calling thread takes the loop over,
  // runs `start` (which makes the call) and then turns of the loop until `done()` — the call's own round trip with
  // no hand-off between threads — and returns true. Otherwise returns false, having run nothing: the caller then
  // makes the call and waits for the I/O thread.
  bool drive(const std::function<void()>& start, const std::function<bool()>& done);

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
  void turn(std::unique_lock<std::mutex>* token);
  void finish_turn();
  void wake_up();  // makes epoll_wait return
  // The earliest deadline of the calls in flight (INT64_MAX: no call awaits an answer or a connection); with it, of
  // everything (the timers too).
  int64_t next_call_deadline() const;
  int64_t next_deadline(int64_t calls) const;

  int epoll_fd_ = -1;
  // Every watched socket again, for its end only (EPOLLRDHUP, EPOLLHUP, EPOLLERR; edge-triggered), and the wake-up
  // descriptor: where the I/O thread sleeps when no call is in flight (idle_). A synchronous caller then drives its
  // call through epoll_fd_ alone, and its answer wakes it alone. Were the I/O thread asleep on epoll_fd_ too, the
  // answer would wake it as well (a level-triggered event still ready wakes the poller's other waiter), and it would
  // then block on the token until the caller is done: two thread switches per synchronous call.
  int idle_epoll_fd_ = -1;
  int wake_fd_ = -1;
  std::thread thread_;
  // Held by whichever thread runs a turn: the I/O thread (which lets go of it while it sleeps) or a driving caller.
  std::mutex drive_mu_;
  uint64_t turns_ = 0;
  bool events_left_ = false;  // the last turn had (or dropped) socket events: epoll_fd_ may hold more

  std::mutex mu_;
  std::vector<Task> posted_;
  bool awake_ = true;  // the loop is not (about to be) asleep in epoll_wait: posting needs no wake-up
  bool idle_ = false;   // the I/O thread sleeps on idle_epoll_fd_ ...
  int64_t idle_until_us_ = INT64_MAX;  // ... until then at most (its next timer)

  int64_t now_us_ = 0;
  std::vector<Deadlines*> deadlines_;
  std::vector<Flushable*> dirty_;
  std::multimap<int64_t, Task> timers_;
  std::vector<Task> deferred_;
};

}  // namespace ratewarden
