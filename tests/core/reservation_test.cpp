// Reservations (docs/algorithms.md, "Reservations"): callers of many threads and processes served in arrival order,
// each at a slot of its own, on every shared store; the refusals and failures a caller can meet; and a refund on a
// hybrid store. The decisions themselves are pinned down by the conformance vectors and the differential test.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "redis_server.hpp"
#include "test_support.hpp"

namespace ratewarden::testing {
namespace {

constexpr int64_t kStart = 1702080000000000;
constexpr int64_t kInterval = 10000;  // "100/s": one slot every 10 ms

RedisServer& redis() { return shared_redis_server(); }
RedisCluster& cluster() { return shared_redis_cluster(); }
PostgresServer& postgres() { return shared_postgres_server(); }

std::string url_of(const std::string& name) {
  if (name == "redis") return redis().url();
  if (name == "cluster") return cluster().url();
  if (name == "postgres") return postgres().url("?timeout=5s");
  if (name == "local_first") return redis().url() + "?mode=local_first";
  return "memory://";
}

LimiterOptions paced(Algorithm algorithm, const std::string& prefix) {
  LimiterOptions o;
  o.algorithm = algorithm;
  o.burst = 1;
  o.prefix = prefix;
  return o;
}

std::string unique_prefix() {
  static std::atomic<int> n{0};
  return "reserve" + std::to_string(getpid()) + "_" + std::to_string(n++);
}

struct Case {
  const char* store;
  Algorithm algorithm;
};

class Reservations : public ::testing::TestWithParam<Case> {};

// Time stands still (a test clock): 8 threads x 25 reservations at once must get the slots 0, 10 ms, 20 ms, ...
// 1990 ms, each exactly once — none shared, none skipped.
TEST_P(Reservations, ThreadsGetOneSlotEachInArrivalOrder) {
  ManualClock clock(kStart);
  Limiter limiter("100/s", open_store(url_of(GetParam().store), clock.clock()),
                  paced(GetParam().algorithm, unique_prefix()));
  std::mutex mu;
  std::vector<int64_t> waits;
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 25; ++i) {
        const Decision d = limiter.reserve("k", 1, INT64_MAX);
        std::lock_guard<std::mutex> lock(mu);
        waits.push_back(d.allowed ? d.wait_us : -1);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  std::sort(waits.begin(), waits.end());
  ASSERT_EQ(waits.size(), 200u);
  for (size_t i = 0; i < waits.size(); ++i) ASSERT_EQ(waits[i], static_cast<int64_t>(i) * kInterval) << i;
  // The next caller that will not wait 2 s is refused, charging nothing.
  const Decision refused = limiter.reserve("k", 1, 1999999);
  EXPECT_FALSE(refused.allowed);
  EXPECT_EQ(refused.retry_after_us, 200 * kInterval);
  EXPECT_EQ(limiter.reserve("k", 1, 2000000).wait_us, 200 * kInterval);
}

// max_wait = 0 is a hit: the same decisions as hit on a twin key, step by step.
TEST_P(Reservations, NoWaitIsAHit) {
  ManualClock clock(kStart);
  auto store = open_store(url_of(GetParam().store), clock.clock());
  LimiterOptions o = paced(GetParam().algorithm, unique_prefix());
  o.burst = 3;
  Limiter limiter("10/s", store, o);
  for (int i = 0; i < 12; ++i) {
    Decision reserved = limiter.reserve("a", 1, 0);
    const Decision hit = limiter.hit("b", 1);
    EXPECT_EQ(reserved.wait_us, 0);
    reserved.ticket = 0;
    EXPECT_EQ(reserved, hit) << i;
    clock.advance(37000);
  }
}

// However long a caller would wait, a reservation waits at most 2^50 µs (about 35.7 years): on "1/3650d" the slots
// 0, T, 2T and 3T, then a denial that charges nothing. Slots without that bound took the state past 2^53 µs and then
// wrapped it, the key back at its full quota.
TEST_P(Reservations, WaitAtMost2To50Microseconds) {
  ManualClock clock(kStart);
  auto store = open_store(url_of(GetParam().store), clock.clock());
  Limiter limiter("1/3650d", store, paced(GetParam().algorithm, unique_prefix()));
  const int64_t period = 3650LL * 86400 * 1000000;
  for (int64_t slot = 0; slot < 4; ++slot) {
    const Decision d = limiter.reserve("k", 1, INT64_MAX);
    ASSERT_TRUE(d.allowed) << slot;
    EXPECT_EQ(d.wait_us, slot * period);
  }
  for (int i = 0; i < 3; ++i) {
    const Decision refused = limiter.reserve("k", 1, INT64_MAX);
    EXPECT_FALSE(refused.allowed);
    EXPECT_EQ(refused.retry_after_us, 4 * period);
  }
  EXPECT_FALSE(limiter.peek("k").allowed);
  EXPECT_GT(Limiter::kMaxReserveWaitUs, 3 * period);
  EXPECT_LT(Limiter::kMaxReserveWaitUs, 4 * period);
}

INSTANTIATE_TEST_SUITE_P(EveryStore, Reservations,
                         ::testing::Values(Case{"memory", Algorithm::gcra}, Case{"memory", Algorithm::token_bucket},
                                           Case{"redis", Algorithm::gcra}, Case{"redis", Algorithm::token_bucket},
                                           Case{"cluster", Algorithm::gcra}, Case{"postgres", Algorithm::gcra},
                                           Case{"postgres", Algorithm::token_bucket},
                                           Case{"local_first", Algorithm::gcra}),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return std::string(info.param.store) + "_" + algorithm_name(info.param.algorithm).data();
                         });

// Four forked processes, each with its own connections, reserve at once on the server's own clock. Each ticket (a
// gcra reservation's: its slot + one interval, in the server's clock), gathered through a pipe, names a slot of its
// own: sorted, they lie at least 10 ms apart (exactly 10 ms while callers queue).
TEST(ReservationsAcrossProcesses, ProcessesShareOneQueue) {
  const std::string prefix = unique_prefix();
  const std::string url = redis().url();  // the server starts here, in the parent: one for every child
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  std::vector<pid_t> children;
  for (int p = 0; p < 4; ++p) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      close(fds[0]);
      int status = 0;
      try {
        Limiter limiter("100/s", open_store(url), paced(Algorithm::gcra, prefix));
        for (int i = 0; i < 25; ++i) {
          const Decision d = limiter.reserve("k", 1, INT64_MAX);
          const int64_t at = d.allowed ? d.ticket : -1;
          if (write(fds[1], &at, sizeof at) != sizeof at) status = 1;
        }
      } catch (...) {
        status = 2;
      }
      _exit(status);
    }
    children.push_back(pid);
  }
  close(fds[1]);
  std::vector<int64_t> waits;
  int64_t w;
  while (read(fds[0], &w, sizeof w) == sizeof w) waits.push_back(w);
  close(fds[0]);
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  ASSERT_EQ(waits.size(), 100u);
  std::sort(waits.begin(), waits.end());
  EXPECT_GT(waits.front(), 0);
  int queued = 0;
  for (size_t i = 1; i < waits.size(); ++i) {
    ASSERT_GE(waits[i] - waits[i - 1], kInterval) << i;
    queued += waits[i] - waits[i - 1] == kInterval;
  }
  EXPECT_GT(queued, 50);  // 100 calls at once outrun 100/s: most of them queued
}

TEST(ReservationErrors, RefusedWhereTheyCannotHoldASlot) {
  auto store = open_store("memory://");
  Limiter window("10/s", store, with_algorithm(Algorithm::fixed_window));
  EXPECT_THROW(window.reserve("k", 1, 1000), InvalidArgument);
  Limiter gcra("10/s", store, with_algorithm(Algorithm::gcra));
  EXPECT_THROW(gcra.reserve("k", 1, -1), InvalidArgument);
  EXPECT_THROW(gcra.reserve("k", 11, 1000), InvalidArgument);  // beyond the burst: never allowed
  EXPECT_THROW(gcra.reserve("", 1, 1000), InvalidArgument);
  bool called = false;
  EXPECT_THROW(gcra.reserve_async("k", 1, -5, [&](const Decision*, const Error*) { called = true; }), InvalidArgument);
  EXPECT_FALSE(called);
}

// A window algorithm has no slot to give back: cancel refuses as reserve does, whatever reservation it is given
// (the stores' window scripts would read a cancel as a peek, and Redis's answer "given back").
TEST(ReservationErrors, CancelRefusedByTheWindowAlgorithms) {
  auto store = open_store("memory://");
  Decision made_up;
  made_up.allowed = true;
  made_up.ticket = 1;
  for (Algorithm a : {Algorithm::fixed_window, Algorithm::sliding_window, Algorithm::sliding_log}) {
    Limiter window("10/s", store, with_algorithm(a));
    EXPECT_THROW(window.cancel("k", 1, made_up), InvalidArgument) << algorithm_name(a);
    bool called = false;
    EXPECT_THROW(window.cancel_async("k", 1, made_up, [&](const Decision*, const Error*) { called = true; }),
                 InvalidArgument);
    EXPECT_FALSE(called);
  }
}

TEST(ReservationErrors, CancelGivesBackOnlyWhatItCan) {
  ManualClock clock(kStart);
  auto store = open_store("memory://", clock.clock());
  Limiter two("1/s; 100/minute", store, with_algorithm(Algorithm::gcra));
  const Decision r = two.reserve("k", 1, INT64_MAX);
  ASSERT_TRUE(r.allowed);
  EXPECT_EQ(r.ticket, 0);
  EXPECT_FALSE(two.cancel("k", 1, r));  // several policies: no ticket
  Limiter one("1/s", store, paced(Algorithm::gcra, "one"));
  one.reserve("k", 1, 0);
  const Decision refused = one.reserve("k", 1, 0);
  ASSERT_FALSE(refused.allowed);
  EXPECT_FALSE(one.cancel("k", 1, refused));  // nothing was charged
  const Decision waiting = one.reserve("k", 1, INT64_MAX);
  ASSERT_EQ(waiting.wait_us, 1000000);
  EXPECT_THROW(one.cancel("k", 0, waiting), InvalidArgument);
  EXPECT_TRUE(one.cancel("k", 1, waiting));
  EXPECT_EQ(one.reserve("k", 1, INT64_MAX).wait_us, 1000000);  // the next caller takes the slot given back
}

// A store that is down: reserve answers as hit does (on_store_error), a cancel gives nothing back.
TEST(ReservationErrors, StoreDown) {
  for (OnStoreError policy : {OnStoreError::raise, OnStoreError::allow, OnStoreError::deny}) {
    LimiterOptions o = paced(Algorithm::gcra, "down");
    o.on_store_error = policy;
    Limiter limiter("10/s", open_store("redis://127.0.0.1:1?timeout=100ms&connect_timeout=100ms"), o);
    Decision slot;
    slot.allowed = true;
    slot.ticket = kStart;
    if (policy == OnStoreError::raise) {
      EXPECT_THROW(limiter.reserve("k", 1, 1000), StoreError);
      EXPECT_THROW(limiter.cancel("k", 1, slot), StoreError);
      continue;
    }
    const Decision d = limiter.reserve("k", 1, 1000);
    EXPECT_EQ(d.allowed, policy == OnStoreError::allow);
    EXPECT_EQ(d.wait_us, 0);
    EXPECT_FALSE(limiter.cancel("k", 1, slot));
  }
}

// A hybrid store's local denial never answers a reservation that may wait: it goes to the store.
TEST(ReservationHybrid, LocalKnowledgeNeverRefusesAWait) {
  Limiter limiter("2/10s", open_store(redis().url() + "?mode=local_first"), paced(Algorithm::gcra, unique_prefix()));
  while (limiter.hit("k").allowed) {
  }
  // The process answers locally once its knowledge is fresh (its first read of the reset log has come back: slow
  // under TSan); until then a denied hit goes to the store, which denies it again (and writes nothing).
  Decision learnt;
  for (int i = 0; i < 300 && !limiter.hit_now("k", 1, learnt); ++i) {
    ASSERT_FALSE(limiter.hit("k").allowed);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(limiter.hit_now("k", 1, learnt));  // the process knows the key is denied
  const Decision d = limiter.reserve("k", 1, 20000000);
  ASSERT_TRUE(d.allowed);
  EXPECT_GT(d.wait_us, 0);
}

// A refund on a hybrid store goes to the store, and the process that made it forgets the denial it had learnt.
TEST(RefundHybrid, TheRefundingProcessLearnsItsAnswer) {
  Limiter limiter("2/minute", open_store(redis().url() + "?mode=local_first"),
                  with_algorithm(Algorithm::fixed_window));
  const std::string key = unique_prefix();
  while (limiter.hit(key).allowed) {
  }
  Decision local;
  ASSERT_TRUE(limiter.hit_now(key, 1, local));
  EXPECT_FALSE(local.allowed);
  const Decision after = limiter.refund(key, 1);
  EXPECT_TRUE(after.allowed);
  EXPECT_EQ(after.remaining, 1);
  EXPECT_FALSE(limiter.hit_now(key, 1, local));  // nothing known locally: the next hit goes to the store
  EXPECT_TRUE(limiter.hit(key).allowed);
  EXPECT_FALSE(limiter.hit(key).allowed);
}

}  // namespace
}  // namespace ratewarden::testing
