#include "io_loop.hpp"

#include <pthread.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>
#include <stdexcept>
#include <string>

#include "fork_guard.hpp"
#include "per_process.hpp"
#include "ratewarden/clock.hpp"

namespace ratewarden {
namespace {

thread_local bool is_loop_thread = false;

}  // namespace

IoLoop& IoLoop::current() {
  // Never destroyed: the loop thread outlives static destruction. A child's inherited loop has no thread, and the
  // fork handler closed its descriptors.
  static auto* loops = new PerProcess<IoLoop>;
  return loops->get([] { return new IoLoop(); });
}

bool IoLoop::on_loop_thread() { return is_loop_thread; }

IoLoop::IoLoop() {
  watch_forks();
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  idle_epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (epoll_fd_ < 0 || idle_epoll_fd_ < 0 || wake_fd_ < 0)
    throw std::runtime_error(std::string("cannot start the I/O loop: ") + std::strerror(errno));
  register_inherited_fd(epoll_fd_);
  register_inherited_fd(idle_epoll_fd_);
  register_inherited_fd(wake_fd_);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.ptr = nullptr;  // the wake-up descriptor
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &ev);
  ev.events = EPOLLIN | EPOLLET;
  epoll_ctl(idle_epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &ev);
  now_us_ = monotonic_now_us();
  thread_ = std::thread([this] { run(); });
  thread_.detach();  // lives as long as the process; exit() ends it wherever it is
}

namespace {
// Between hold_io_wakeups() and release_io_wakeups() (limiter.hpp): this thread's posts leave the I/O thread asleep.
thread_local bool wakeups_held = false;
thread_local IoLoop* held_loop = nullptr;  // the loop a held post left asleep: release_io_wakeups() wakes it
}  // namespace

void IoLoop::post(Task task) {
  bool wake;
  {
    std::lock_guard<std::mutex> lock(mu_);
    posted_.push_back(std::move(task));
    wake = !awake_;
    if (wake && wakeups_held) {  // any turn of the loop takes it meanwhile; else the release wakes the loop
      held_loop = this;
      return;
    }
    awake_ = true;
  }
  if (wake) wake_up();
}

void IoLoop::wake_for_posted() {
  bool wake;
  {
    std::lock_guard<std::mutex> lock(mu_);
    wake = !awake_ && !posted_.empty();
    if (wake) awake_ = true;
  }
  if (wake) wake_up();
}

void hold_io_wakeups() { wakeups_held = true; }

void release_io_wakeups() {
  wakeups_held = false;
  IoLoop* loop = held_loop;
  held_loop = nullptr;
  if (loop != nullptr) loop->wake_for_posted();
}

void IoLoop::wake_up() {
  const uint64_t one = 1;
  ssize_t n = ::write(wake_fd_, &one, sizeof one);
  (void)n;  // the counter cannot overflow in practice; a failed write leaves it already readable
}

void IoLoop::watch(int fd, uint32_t events, IoHandler* handler) {
  epoll_event ev{};
  ev.events = events;
  ev.data.ptr = handler;
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, fd, &ev) != 0 && errno == ENOENT) {
    epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev);
    ev.events = EPOLLRDHUP | EPOLLET;  // (and EPOLLHUP, EPOLLERR): the socket's end, not its answers
    epoll_ctl(idle_epoll_fd_, EPOLL_CTL_ADD, fd, &ev);
  }
}

void IoLoop::unwatch(int fd) {
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
  epoll_ctl(idle_epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
}

void IoLoop::add_deadlines(Deadlines* d) { deadlines_.push_back(d); }

void IoLoop::remove_deadlines(Deadlines* d) {
  deadlines_.erase(std::remove(deadlines_.begin(), deadlines_.end(), d), deadlines_.end());
}

void IoLoop::mark_dirty(Flushable* f) {
  if (std::find(dirty_.begin(), dirty_.end(), f) == dirty_.end()) dirty_.push_back(f);
}

void IoLoop::defer(Task task) { deferred_.push_back(std::move(task)); }

void IoLoop::unmark_dirty(Flushable* f) { dirty_.erase(std::remove(dirty_.begin(), dirty_.end(), f), dirty_.end()); }

void IoLoop::run_at(int64_t when_us, Task task) { timers_.emplace(when_us, std::move(task)); }

int64_t IoLoop::next_call_deadline() const {
  int64_t next = INT64_MAX;
  for (const Deadlines* d : deadlines_) next = std::min(next, d->next_deadline_us());
  return next;
}

int64_t IoLoop::next_deadline(int64_t calls) const {
  return std::min(calls, timers_.empty() ? INT64_MAX : timers_.begin()->first);
}

void IoLoop::run() {
  is_loop_thread = true;
  pthread_setname_np(pthread_self(), "ratewarden-io");  // for operators: ps -L, top -H, gdb
  std::unique_lock<std::mutex> token(drive_mu_);
  while (true) turn(&token);
}

bool IoLoop::drive(const std::function<void()>& start, const std::function<bool()>& done) {
  std::unique_lock<std::mutex> token(drive_mu_, std::try_to_lock);
  if (!token.owns_lock()) return false;  // the I/O thread is at work: it will answer
  struct AsLoopThread {
    const bool was = is_loop_thread;
    AsLoopThread() { is_loop_thread = true; }
    ~AsLoopThread() { is_loop_thread = was; }
  } as_loop_thread;
  now_us_ = monotonic_now_us();
  start();
  finish_turn();
  while (!done()) turn(nullptr);
  // The I/O thread may be asleep with a timeout chosen before this: it must look again if anything is left to do,
  // and the next post must wake it (this thread's turns left awake_ set).
  const int64_t calls = next_call_deadline();
  const int64_t next = next_deadline(calls);
  bool wake;
  {
    std::lock_guard<std::mutex> lock(mu_);
    // Idle, it is woken only for what it alone would do: run what was posted, watch calls left in flight, or fire a
    // timer earlier than the one it sleeps until.
    wake = idle_ ? !posted_.empty() || calls != INT64_MAX || next < idle_until_us_ : next != INT64_MAX || !posted_.empty();
    awake_ = wake;
  }
  if (wake) wake_up();
  return true;
}

// One turn: sleep until an event, a post or a deadline; run what is posted; handle the events; expire deadlines;
// flush the output every task and event of the turn produced (so calls made together leave together). The I/O
// thread lets go of the token while it sleeps (`token`), so that a synchronous caller may run turns meanwhile.
void IoLoop::turn(std::unique_lock<std::mutex>* token) {
  int timeout_ms = -1;
  const int64_t calls = next_call_deadline();
  const int64_t next = next_deadline(calls);
  if (next != INT64_MAX) {
    const int64_t wait_us = next - monotonic_now_us();
    timeout_ms = wait_us <= 0 ? 0 : static_cast<int>(std::min<int64_t>((wait_us + 999) / 1000, INT_MAX));
  }
  bool sleeping;
  bool quiet = false;  // the I/O thread, with nothing to do and no call in flight
  bool idle = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (posted_.empty()) awake_ = false;  // from here on, a post writes the wake-up descriptor
    sleeping = !awake_;
    if (token != nullptr) {
      quiet = sleeping && calls == INT64_MAX;
      // Idle only once epoll_fd_ has nothing to report: an event left there (a socket's end not yet read to its
      // close) would wake no idle sleep, the end of a socket being an edge in idle_epoll_fd_, reported once.
      idle = idle_ = quiet && !events_left_;
      idle_until_us_ = next;
    }
  }
  epoll_event events[64];
  const uint64_t seen = turns_;
  if (token != nullptr) token->unlock();
  if (idle) {  // until a post, the end of a socket, or the next timer; then what the sockets did, at once
    epoll_wait(idle_epoll_fd_, events, 64, timeout_ms);
    std::lock_guard<std::mutex> lock(mu_);
    idle_ = false;
  }
  const int n = epoll_wait(epoll_fd_, events, 64, sleeping && !quiet ? timeout_ms : 0);
  if (token != nullptr) token->lock();
  now_us_ = monotonic_now_us();
  if (turns_ != seen) {  // a caller ran turns while this thread slept: these events may name handlers it deleted
    events_left_ = true;
    std::lock_guard<std::mutex> lock(mu_);
    awake_ = true;
    return;
  }
  ++turns_;
  events_left_ = n > 0;

  std::vector<Task> tasks;
  {
    std::lock_guard<std::mutex> lock(mu_);
    tasks.swap(posted_);
    awake_ = true;
  }
  for (Task& t : tasks) t();

  for (int i = 0; i < n; ++i) {
    auto* handler = static_cast<IoHandler*>(events[i].data.ptr);
    if (handler == nullptr) {
      uint64_t count;
      ssize_t r = ::read(wake_fd_, &count, sizeof count);
      (void)r;
      continue;
    }
    handler->on_io(events[i].events);
  }

  while (!timers_.empty() && timers_.begin()->first <= now_us_) {
    Task t = std::move(timers_.begin()->second);
    timers_.erase(timers_.begin());
    t();
  }
  // Copied: an expiry may add or remove deadline owners.
  const std::vector<Deadlines*> owners = deadlines_;
  for (Deadlines* d : owners)
    if (std::find(deadlines_.begin(), deadlines_.end(), d) != deadlines_.end() && d->next_deadline_us() <= now_us_)
      d->expire(now_us_);

  finish_turn();
}

void IoLoop::finish_turn() {
  while (!dirty_.empty()) {
    std::vector<Flushable*> dirty;
    dirty.swap(dirty_);
    for (Flushable* f : dirty) f->flush();
  }
  std::vector<Task> deferred;
  deferred.swap(deferred_);
  for (Task& t : deferred) t();
}

}  // namespace ratewarden
