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

// The test's clock stops a thread that set this inside its call: a store's clock is read under its shard's lock.
thread_local bool stop_in_clock = false;

// A child forked while a thread of the parent is inside a memory-store call: that shard's lock is held by a thread
// the child does not have. The child replaces that shard with an empty one (its keys restart), keeps every other
// shard as it was, and counts its entries again (its bound is where it was, not short by the lost shard's entries).
TEST(Fork, AChildForkedDuringAMemoryStoreCallReplacesThatShardOnly) {
  std::atomic<bool> inside{false}, release{false};
  MemoryStoreOptions options;
  options.max_keys = 256;
  options.shards = 4;
  options.clock = [&] {
    if (stop_in_clock) {
      inside = true;
      while (!release) std::this_thread::yield();
    }
    return int64_t{1000000};
  };
  auto memory = std::make_shared<MemoryStore>(options);
  ASSERT_EQ(memory->shard_count(), 4u);
  Limiter limiter("5/day", memory);
  const std::string stopped = "stopped";
  std::vector<std::string> beside, elsewhere;  // keys in the stopped call's shard, and in the others
  for (int n = 0; beside.size() < 10 || elsewhere.size() < 20; ++n) {
    const std::string key = "k" + std::to_string(n);
    auto& group = memory->shard_of(key) == memory->shard_of(stopped) ? beside : elsewhere;
    if (group.size() < (&group == &beside ? 10u : 20u)) group.push_back(key);
  }
  for (const auto& key : beside) ASSERT_EQ(limiter.hit(key).used, 1);
  for (const auto& key : elsewhere) ASSERT_EQ(limiter.hit(key).used, 1);
  for (const auto& key : elsewhere) ASSERT_EQ(limiter.hit(key).used, 2);
  std::thread caller([&] {
    stop_in_clock = true;
    limiter.hit(stopped);
  });
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!inside && std::chrono::steady_clock::now() < until) std::this_thread::yield();
  // No fork unless the caller is inside its call; the caller is let go and joined whatever happens.
  const pid_t pid = inside ? fork() : -4;
  if (pid == 0) {
    // Exit codes: 1 the shards kept or lost the wrong keys, 2 the entry count is off, 3 the bound, 4 an error.
    int code = 0;
    try {
      if (memory->size() != static_cast<int64_t>(elsewhere.size())) code = 2;
      for (const auto& key : elsewhere)
        if (code == 0 && limiter.hit(key).used != 3) code = 1;
      for (const auto& key : beside)
        if (code == 0 && limiter.hit(key).used != 1) code = 1;
      if (code == 0 && limiter.hit(stopped).used != 1) code = 1;
      // Up to the bound with new keys: nothing is evicted before it, one entry at it.
      const int64_t room = options.max_keys - memory->size();
      for (int64_t n = 0; code == 0 && n < room; ++n) limiter.hit("fill" + std::to_string(n));
      if (code == 0 && (memory->stats().evictions != 0 || memory->size() != options.max_keys)) code = 3;
      if (code == 0 && (limiter.hit("one-more").used != 1 || memory->stats().evictions != 1)) code = 3;
    } catch (const std::exception&) {
      code = 4;
    }
    _exit(code);
  }
  const int code = pid == -4 ? -4 : pid < 0 ? -3 : wait_child(pid, Ms(10000));
  release = true;
  caller.join();
  ASSERT_EQ(code, 0) << "-1: the child hung; 1: kept or lost the wrong keys; 2: entry count; 3: bound; 4: error; "
                          "-3: fork failed; -4: the caller never reached the clock";
  EXPECT_EQ(limiter.hit(stopped).used, 2);  // the parent's caller finished its call
  EXPECT_EQ(memory->size(), 31);
}

// Forks 100 times while `busy(t)` runs in `threads` other threads; each child hits `child_keys`, which must be
// allowed. A child that inherited a shard's lock held would hang at its first call on that shard.
void fork_while(Limiter& limiter, const std::vector<std::string>& child_keys, int threads,
                const std::function<void(int)>& busy) {
  std::atomic<bool> stop{false};
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t)
    workers.emplace_back([&, t] {
      while (!stop) busy(t);
    });
  for (int round = 0; round < 100; ++round) {
    std::this_thread::sleep_for(Ms(1));
    const pid_t pid = fork();
    if (pid == 0) {
      try {
        for (const std::string& key : child_keys)
          if (!limiter.hit(key).allowed) _exit(1);
      } catch (...) {
        _exit(2);  // never back into the test runner, in a child
      }
      _exit(0);
    }
    const int code = pid < 0 ? -3 : wait_child(pid, Ms(10000));
    EXPECT_EQ(code, 0) << "round " << round << " (-1: the child hung; 1: denied; 2: an error)";
    if (code != 0) break;
  }
  stop = true;
  for (auto& t : workers) t.join();
}

// The same, at random instants: other threads on one hot key and on new keys that insert and evict.
TEST(Fork, MemoryStoreWhileOtherThreadsAreInItsCalls) {
  auto store = open_store("memory://?max_keys=1000");
  Limiter limiter("1000000000/day", store);
  std::vector<int64_t> n(4);
  fork_while(limiter, {"hot", "child"}, 4, [&](int t) {
    limiter.hit("hot");
    const std::string key = "new-" + std::to_string(t) + "-" + std::to_string(n[static_cast<size_t>(t)]++);
    limiter.hit(key);  // inserts, and evicts past 1,000
  });
}

// A caller holds its shard's lock while it lowers the store's expiry hint under hint_mu_: the child gets a fresh
// hint_mu_ too.
TEST(Fork, MemoryStoreWhileACallerLowersTheExpiryHint) {
  auto store = open_store("memory://?shards=1");
  Limiter limiter("1000000000/day", store);
  fork_while(limiter, {"child"}, 2, [&](int t) {
    const std::string key = "hint-" + std::to_string(t);
    limiter.hit(key);  // an insert into an empty shard: its earliest expiry moves earlier
    limiter.reset(key);
  });
}

// A caller whose shard is empty, in a full store, holds its shard's lock while it takes another's to evict from it:
// the child finds both held, and replaces both.
TEST(Fork, MemoryStoreWhileACallerEvictsFromAnotherShard) {
  MemoryStoreOptions options;
  options.max_keys = 128;
  options.shards = 2;
  auto memory = std::make_shared<MemoryStore>(options);
  ASSERT_EQ(memory->shard_count(), 2u);
  Limiter limiter("1000000000/day", memory);
  std::vector<std::string> in_first, in_second;
  for (int n = 0; in_first.size() < 1000 || in_second.size() < 2; ++n) {
    const std::string key = "k" + std::to_string(n);
    (memory->shard_of(key) == 0 ? in_first : in_second).push_back(key);
  }
  for (int n = 0; n < options.max_keys; ++n) limiter.hit(in_first[static_cast<size_t>(n)]);
  size_t next = static_cast<size_t>(options.max_keys);
  fork_while(limiter, {in_second[1], in_first[0]}, 1, [&](int) {
    limiter.hit(in_first[next++ % in_first.size()]);  // the store full again, with shard 0's entries
    limiter.hit(in_second[0]);                        // shard 1 empty: evicts from shard 0
    limiter.reset(in_second[0]);
  });
}

}  // namespace
}  // namespace ratewarden::testing
