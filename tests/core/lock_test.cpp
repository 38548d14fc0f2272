// The memory store's lock (core/src/util/lock.hpp): its unlock is a plain store and a read of the sleepers' count,
// and the waiter's membarrier makes that safe. A missed wake would leave a thread asleep for good: each case waits
// for its threads with a deadline and fails (rather than hangs) past it.
#include <linux/filter.h>
#include <linux/membarrier.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "util/lock.hpp"

namespace ratewarden::util {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kDeadline = std::chrono::seconds(120);  // far beyond any run's need: only a lost wake reaches it

// Whether thread `tid` of this process is asleep (state S in its stat line).
bool asleep(pid_t tid) {
  std::ifstream stat("/proc/self/task/" + std::to_string(tid) + "/stat");
  std::string line;
  std::getline(stat, line);
  const size_t end = line.rfind(')');
  return end != std::string::npos && end + 2 < line.size() && line[end + 2] == 'S';
}

// Calls `done` until it is true or the deadline passes; false then.
template <class Done>
bool wait_for(Done done) {
  const auto deadline = Clock::now() + kDeadline;
  while (!done()) {
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

// In a child process: from now on the system call `nr` gets `action` (a seccomp filter); false if refused.
bool filter_syscall(uint32_t nr, uint32_t action) {
  sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, nr, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, action),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  sock_fprog program{static_cast<unsigned short>(sizeof filter / sizeof filter[0]), filter};
  return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 && prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program) == 0;
}

// Threads that each take the lock `rounds` times to add one to a plain counter, some holding it long enough for the
// others to give up spinning and sleep. Returns the counter, or -1 if they did not all finish by the deadline (the
// threads are then left behind: the process is failing anyway).
long contend(int threads, int rounds) {
  auto lock = std::make_shared<Lock>();
  auto counter = std::make_shared<long>(0);
  auto finished = std::make_shared<std::atomic<int>>(0);
  for (int t = 0; t < threads; ++t)
    std::thread([=] {
      for (int i = 0; i < rounds; ++i) {
        std::lock_guard<Lock> hold(*lock);
        ++*counter;
        if (i % 64 == t) std::this_thread::sleep_for(std::chrono::microseconds(50));
      }
      finished->fetch_add(1);
    }).detach();
  if (!wait_for([&] { return finished->load() == threads; })) return -1;
  std::lock_guard<Lock> hold(*lock);
  return *counter;
}

// Threads that each take the lock once while this thread holds it, and are all asleep on it (no longer spinning)
// when it lets go: every one of them must get it.
bool all_sleepers_wake(int threads) {
  Lock lock;
  std::atomic<int> done{0};
  std::vector<std::atomic<pid_t>> tids(threads);
  std::vector<std::thread> waiting;
  lock.lock();
  for (int t = 0; t < threads; ++t)
    waiting.emplace_back([&, t] {
      tids[t] = static_cast<pid_t>(syscall(SYS_gettid));
      std::lock_guard<Lock> hold(lock);
      done.fetch_add(1);
    });
  const bool slept = wait_for([&] {
    for (auto& tid : tids)
      if (tid.load() == 0 || !asleep(tid.load())) return false;
    return true;
  });
  lock.unlock();
  const bool woke = wait_for([&] { return done.load() == threads; });
  if (!woke) {
    ADD_FAILURE() << done.load() << " of " << threads << " sleepers got the lock: a wake was lost";
    std::_Exit(1);  // the rest sleep on a lock on this stack
  }
  for (auto& th : waiting) th.join();
  return slept;
}

TEST(Lock, EveryWaiterGetsItUnderContention) {
  EXPECT_EQ(contend(8, 20000), 8 * 20000);
}

TEST(Lock, SleepersAreWokenWhenItIsLetGo) {
  EXPECT_TRUE(all_sleepers_wake(6)) << "the waiters never fell asleep";
}

// Where the kernel refuses membarrier (a seccomp filter here, as a container's may), waiters still get the lock:
// they sleep for bounded spans and check again. In a child process, whose filter then dies with it.
TEST(Lock, WithoutMembarrierWaitersStillGetIt) {
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (!filter_syscall(SYS_membarrier, SECCOMP_RET_ERRNO | ENOSYS)) std::_Exit(2);
    if (syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0 || errno != ENOSYS) std::_Exit(3);
    const bool ok = contend(8, 2000) == 8 * 2000 && all_sleepers_wake(6);
    std::_Exit(ok ? 0 : 4);
  }
  int status = 0;
  ASSERT_TRUE(wait_for([&] { return waitpid(child, &status, WNOHANG) == child; })) << "the child hung";
  ASSERT_TRUE(WIFEXITED(status)) << "status " << status;
  EXPECT_EQ(WEXITSTATUS(status), 0) << "2: no seccomp filter; 3: membarrier not refused; 4: a waiter was lost";
}

// A child forked while a thread of its parent waited on a lock inherits that waiter's count, but not the thread:
// its unlocks must not go on calling futex(FUTEX_WAKE) for a sleeper that is not there (a system call on every
// unlock of that lock, for the child's life). The child runs under a seccomp filter that kills it on any futex call.
TEST(Lock, AForkedChildDropsItsParentsWaiters) {
  Lock lock;
  lock.lock();
  std::atomic<pid_t> tid{0};
  std::thread waiter([&] {
    tid = static_cast<pid_t>(syscall(SYS_gettid));
    std::lock_guard<Lock> hold(lock);
  });
  const bool slept = wait_for([&] { return tid.load() != 0 && asleep(tid.load()); });
  const pid_t child = slept ? fork() : -1;
  if (child == 0) {
    if (!filter_syscall(SYS_futex, SECCOMP_RET_KILL_PROCESS)) std::_Exit(2);
    lock.unlock();  // this thread held it at the fork: it is the child's to let go
    for (int i = 0; i < 3; ++i) {
      lock.lock();
      lock.unlock();
    }
    std::_Exit(0);
  }
  lock.unlock();
  waiter.join();
  ASSERT_TRUE(slept) << "the waiter never fell asleep";
  ASSERT_GE(child, 0);
  int status = 0;
  ASSERT_TRUE(wait_for([&] { return waitpid(child, &status, WNOHANG) == child; })) << "the child hung";
  ASSERT_FALSE(WIFSIGNALED(status) && WTERMSIG(status) == SIGSYS) << "the child's unlock woke its parent's waiter";
  ASSERT_TRUE(WIFEXITED(status)) << "status " << status;
  EXPECT_EQ(WEXITSTATUS(status), 0) << "2: no seccomp filter";
}

}  // namespace
}  // namespace ratewarden::util
