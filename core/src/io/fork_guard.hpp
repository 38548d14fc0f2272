// Which process this is, as the library sees it: a counter that a fork() bumps in the child (internal).
//
// pthread_atfork's child handler runs inside fork(), before any code of the child's: so a single relaxed load per
// call tells a store that its connections, its I/O thread and its locks belong to the parent. A getpid() check
// would cost a system call per call (glibc no longer caches the pid).
#pragma once

#include <cstdint>
#include <mutex>

namespace ratewarden {

// 0 in the process that loaded the library; each fork() gives the child the next number.
uint64_t fork_generation();

// Registers the fork handlers (once per process; cheap after the first call).
void watch_forks();

// File descriptors a forked child must close before anything else runs: the parent's sockets, epoll and eventfd.
// Closing a descriptor in the child never writes to the connection (the parent's copy stays open).
void register_inherited_fd(int fd);
void unregister_inherited_fd(int fd);

// In a forked child: replaces every ForkSafeMutex with an unlocked one (the fork handler calls it).
void reset_in_child();

// A lock for the library's process-wide state (never destroyed). Another thread may hold it at the moment of a
// fork: the child gets a fresh, unlocked one instead of a copy that nobody will ever unlock.
class ForkSafeMutex {
 public:
  ForkSafeMutex();
  void lock() { mu_.lock(); }
  void unlock() { mu_.unlock(); }

 private:
  friend void reset_in_child();
  std::mutex mu_;
  ForkSafeMutex* next_ = nullptr;
};

}  // namespace ratewarden
