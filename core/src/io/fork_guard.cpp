#include "fork_guard.hpp"

#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <new>
#include <vector>

namespace ratewarden {
namespace {

std::atomic<uint64_t> generation{0};

// The descriptors of the library's I/O. The prepare handler holds the lock across fork(), so the child's copy of
// the list is never caught half-changed; the child then closes every descriptor in it and starts an empty list
// with a fresh lock.
struct InheritedFds {
  std::mutex mu;
  std::vector<int> fds;
};
alignas(InheritedFds) unsigned char fds_storage[sizeof(InheritedFds)];
// Never destroyed: fork handlers and the I/O thread may run during exit. Atomic: the thread that made it may not be
// the one whose fork() runs the handlers (glibc's own lock around its handler list orders the two, but nothing the
// C++ memory model or TSan can see).
std::atomic<InheritedFds*> fds_{nullptr};

InheritedFds& fds() { return *fds_.load(std::memory_order_acquire); }

std::atomic<ForkSafeMutex*> all_mutexes{nullptr};

void prepare() { fds().mu.lock(); }
void in_parent() { fds().mu.unlock(); }
void in_child() {
  for (int fd : fds().fds) ::close(fd);
  fds().fds.~vector();
  // The lock is held (by prepare, in the thread that forked): a fresh one replaces it.
  new (&fds().mu) std::mutex();
  new (&fds().fds) std::vector<int>();
  reset_in_child();
  generation.fetch_add(1, std::memory_order_release);
}

}  // namespace

void reset_in_child() {
  for (ForkSafeMutex* m = all_mutexes.load(); m != nullptr; m = m->next_) new (&m->mu_) std::mutex();
}

ForkSafeMutex::ForkSafeMutex() {
  watch_forks();
  next_ = all_mutexes.load();
  while (!all_mutexes.compare_exchange_weak(next_, this)) {
  }
}

uint64_t fork_generation() { return generation.load(std::memory_order_acquire); }

void watch_forks() {
  static const bool registered = [] {
    fds_.store(new (fds_storage) InheritedFds(), std::memory_order_release);
    pthread_atfork(&prepare, &in_parent, &in_child);
    return true;
  }();
  (void)registered;
}

void register_inherited_fd(int fd) {
  std::lock_guard<std::mutex> lock(fds().mu);
  fds().fds.push_back(fd);
}

void unregister_inherited_fd(int fd) {
  std::lock_guard<std::mutex> lock(fds().mu);
  auto& v = fds().fds;
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] == fd) {
      v[i] = v.back();
      v.pop_back();
      return;
    }
  }
}

}  // namespace ratewarden
