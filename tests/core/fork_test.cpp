// fork() after the store was used: a child gets only its own decisions, never a reply meant for its parent or a
// sibling (they would otherwise share the inherited sockets), and the parent goes on undisturbed.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "ratewarden/ratewarden.hpp"
#include "redis_server.hpp"

namespace ratewarden::testing {
namespace {

using Ms = std::chrono::milliseconds;

RedisServer& server() { return shared_redis_server(); }

RedisCluster& cluster() { return shared_redis_cluster(); }

// Waits for the child; kills it and reports a hang after `limit`. Returns its exit code (-1: hung, -2: killed).
int wait_child(pid_t pid, Ms limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > until) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(Ms(5));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -2;
}

// The scenario: 8 limiters (1000/day ... 8000/day) on one store, each used once; then 8 children, each
// hitting its own key with its own limiter 300 times while the parent keeps calling.
void children_get_their_own_decisions(const std::string& url) {
  auto store = open_store(url + "?prefix=fork" + std::to_string(getpid()));
  std::vector<std::unique_ptr<Limiter>> limiters;
  for (int i = 0; i < 8; ++i) {
    limiters.push_back(std::make_unique<Limiter>(std::to_string((i + 1) * 1000) + "/day", store));
    const Decision d = limiters[i]->hit("child" + std::to_string(i));
    ASSERT_EQ(d.used, 1);
  }
  Limiter parent("100000/day", store);
  ASSERT_EQ(parent.hit("parent").used, 1);
  std::vector<pid_t> children;
  for (int i = 0; i < 8; ++i) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int code = 0;
      try {
        for (int n = 0; n < 300 && code == 0; ++n) {
          const Decision d = limiters[i]->hit("child" + std::to_string(i));
          if (!d.allowed || d.limit != (i + 1) * 1000 || d.used != n + 2) code = 1;  // someone else's decision
        }
      } catch (const std::exception&) {
        code = 2;
      }
      _exit(code);
    }
    children.push_back(pid);
  }
  int64_t used = 1;
  const auto until = std::chrono::steady_clock::now() + Ms(200);
  while (std::chrono::steady_clock::now() < until) EXPECT_EQ(parent.hit("parent").used, ++used);  // meanwhile
  for (size_t i = 0; i < children.size(); ++i)
    EXPECT_EQ(wait_child(children[i], Ms(20000)), 0) << "child " << i << " (1: another's decision, 2: an error)";
  for (int i = 0; i < 8; ++i) EXPECT_EQ(limiters[i]->peek("child" + std::to_string(i)).used, 301);
  EXPECT_EQ(parent.hit("parent").used, ++used);  // and after
}

TEST(Fork, ChildrenOfARedisUserGetTheirOwnDecisions) { children_get_their_own_decisions(server().url()); }

TEST(Fork, ChildrenOfAClusterUserGetTheirOwnDecisions) { children_get_their_own_decisions(cluster().url()); }

// A fork while other threads have calls in flight (and may hold the library's locks): the child's calls work, the
// parent's complete, nothing deadlocks — 50 times.
TEST(Fork, WhileOtherThreadsHaveCallsInFlight) {
  auto store = open_store(server().url() + "?prefix=fork-busy" + std::to_string(getpid()));
  Limiter limiter("100000000/day", store);
  std::atomic<bool> stop{false};
  std::atomic<int64_t> parent_calls{0}, parent_errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      while (!stop) {
        try {
          limiter.hit("busy" + std::to_string(t));
          limiter.hit_async("async" + std::to_string(t), 1, [](const Decision*, const Error*) {},
                            Completion::any_thread);
          ++parent_calls;
        } catch (const std::exception&) {
          ++parent_errors;
        }
      }
    });
  }
  for (int round = 0; round < 50; ++round) {
    std::this_thread::sleep_for(Ms(2));
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int code = 0;
      try {
        Limiter own("10/day", store);
        const std::string key = "child-" + std::to_string(getpid());
        for (int n = 0; n < 10 && code == 0; ++n)
          if (own.hit(key).used != n + 1) code = 1;
      } catch (const std::exception&) {
        code = 2;
      }
      _exit(code);
    }
    ASSERT_EQ(wait_child(pid, Ms(10000)), 0) << "round " << round << " (-1: the child hung)";
  }
  stop = true;
  for (auto& t : threads) t.join();
  EXPECT_EQ(parent_errors.load(), 0);
  EXPECT_GT(parent_calls.load(), 0);
}

}  // namespace
}  // namespace ratewarden::testing
