// The hybrid modes (?mode=local_first, ?mode=async; docs/hybrid.md) against real redis-server processes: local
// denials, exactness across processes, resets seen elsewhere, the async error bound, and a store that dies or hangs.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "across_processes.hpp"
#include "ratewarden/ratewarden.hpp"
#include "redis_server.hpp"
#include "test_support.hpp"

namespace ratewarden::testing {
namespace {

using Clock_ = std::chrono::steady_clock;

RedisServer& server() { return shared_redis_server(); }

// A store in a mode whose local knowledge is in use (its reset log read once).
std::shared_ptr<Store> hybrid(const std::string& url) {
  auto store = open_store(url);
  Limiter warm("1/hour", store);
  warm.peek("warm-up");  // starts the background rounds
  for (int i = 0; i < 2000 && store->stats().sync_lag_us < 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return store;
}

std::string unique_key(const char* name) {
  static std::atomic<int> n{0};
  return std::string(name) + ":" + std::to_string(::getpid()) + ":" + std::to_string(n++);
}

LimiterOptions with(Algorithm a) {
  LimiterOptions o;
  o.algorithm = a;
  return o;
}

// Runs `body(index)` in `n` forked children; returns what each wrote (an int64), or -1 for one that failed.
std::vector<int64_t> in_children(int n, const std::function<int64_t(int)>& body, std::vector<pid_t>* pids = nullptr) {
  std::vector<pid_t> children;
  std::vector<int> pipes;
  for (int i = 0; i < n; ++i) {
    int fds[2];
    if (::pipe(fds) != 0) return {};
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::close(fds[0]);
      int64_t v = -1;
      try {
        v = body(i);
      } catch (const std::exception&) {
      }
      const bool wrote = ::write(fds[1], &v, sizeof v) == static_cast<ssize_t>(sizeof v);
      ::_exit(wrote ? 0 : 1);
    }
    ::close(fds[1]);
    children.push_back(pid);
    pipes.push_back(fds[0]);
  }
  if (pids != nullptr) *pids = children;
  std::vector<int64_t> out;
  for (size_t i = 0; i < children.size(); ++i) {
    int64_t v = -1;
    if (::read(pipes[i], &v, sizeof v) != static_cast<ssize_t>(sizeof v)) v = -1;
    ::close(pipes[i]);
    int status = 0;
    ::waitpid(children[i], &status, 0);
    out.push_back(v);
  }
  return out;
}

TEST(HybridUrl, ModesAndTheirOptions) {
  const std::string url = server().url();
  EXPECT_NE(open_store(url + "?mode=local_first")->describe().find("mode=local_first&sync=10ms"), std::string::npos);
  EXPECT_NE(open_store(url + "?mode=async&sync=50ms&lease=2")->describe().find("mode=async&sync=50ms"),
            std::string::npos);
  EXPECT_TRUE(open_store(url + "?mode=local_first")->traits().exact);
  EXPECT_FALSE(open_store(url + "?mode=async")->traits().exact);
  EXPECT_EQ(open_store(url + "?mode=exact")->describe(), open_store(url)->describe());
  EXPECT_THROW(open_store(url + "?mode=fast"), InvalidArgument);
  EXPECT_THROW(open_store(url + "?sync=10ms"), InvalidArgument);
  EXPECT_THROW(open_store(url + "?mode=local_first&lease=1%"), InvalidArgument);
  EXPECT_THROW(open_store(url + "?mode=async&lease=0"), InvalidArgument);
  EXPECT_THROW(open_store(url + "?mode=async&sync=0ms"), InvalidArgument);
  try {
    open_store("memory://?mode=local_first");
    FAIL() << "memory:// took a hybrid mode";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("shared across processes"), std::string::npos) << e.what();
  }
}

// PostgreSQL logs its resets too: both modes work on it, a reset from an exact-mode store reaches local_first, and
// local_first admits exactly the limit across processes.
TEST(Hybrid, OnPostgreSQL) {
  PostgresServer pg;
  for (const char* mode : {"local_first", "async"}) {
    SCOPED_TRACE(mode);
    auto store = hybrid(pg.url(std::string("?timeout=5s&mode=") + mode));
    Limiter local("3/hour", store);
    Limiter other("3/hour", open_store(pg.url("?timeout=5s")));
    const std::string key = unique_key("pg");
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(local.hit(key).allowed);
    ASSERT_FALSE(local.hit(key).allowed);
    const int64_t before = store->stats().local_denials;
    for (int i = 0; i < 100; ++i) ASSERT_FALSE(local.hit(key).allowed);
    EXPECT_EQ(store->stats().local_denials, before + 100);
    other.reset(key);
    const auto t0 = Clock_::now();
    while (!local.peek(key).allowed) {
      ASSERT_LT(Clock_::now() - t0, std::chrono::seconds(2)) << "the reset was never seen";
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    EXPECT_GT(store->stats().invalidations, 0);
  }
  // Keys of any bytes go through the log.
  auto store = hybrid(pg.url("?timeout=5s&mode=local_first"));
  Limiter local("1/hour", store);
  const std::string binary("k\0\xff,\x01", 5);
  local.hit(binary);
  ASSERT_FALSE(local.hit(binary).allowed);
  Limiter("1/hour", open_store(pg.url("?timeout=5s"))).reset(binary);
  const auto t0 = Clock_::now();
  while (!local.peek(binary).allowed) {
    ASSERT_LT(Clock_::now() - t0, std::chrono::seconds(2)) << "the binary key's reset was never seen";
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

TEST(Hybrid, OnPostgreSQLExactAcrossProcesses) {
  PostgresServer pg;
  EXPECT_EQ(allowed_across_processes(pg.url("?timeout=10s&pool=2&mode=local_first"), "40/minute", Algorithm::gcra, 4,
                                     2, 60),
            40);
}

// One process flooding a denied key: after the store's first denial, no round trip until the key may free up.
TEST(LocalFirst, DenialsTheStoreProvedAreAnsweredLocally) {
  for (Algorithm a : {Algorithm::fixed_window, Algorithm::sliding_window, Algorithm::sliding_log,
                      Algorithm::token_bucket, Algorithm::gcra}) {
    SCOPED_TRACE(algorithm_name(a));
    auto store = hybrid(server().url() + "?mode=local_first");
    auto exact = open_store(server().url());
    Limiter local("5/minute", store, with(a));
    Limiter truth("5/minute", exact, with(a));
    const std::string key = unique_key("flood");
    for (int i = 0; i < 5; ++i) EXPECT_TRUE(local.hit(key).allowed);
    const StoreStats before = store->stats();
    EXPECT_FALSE(local.hit(key).allowed);  // the store's denial
    for (int i = 0; i < 2000; ++i) {
      const Decision d = local.hit(key);
      ASSERT_FALSE(d.allowed);
      ASSERT_GT(d.retry_after_us, 0);
      if (i % 500 == 0) {
        // Never earlier than the store itself says now.
        const Decision t = truth.peek(key);
        EXPECT_FALSE(t.allowed);
        EXPECT_GE(d.retry_after_us + 2000, t.retry_after_us);
      }
    }
    const StoreStats after = store->stats();
    EXPECT_EQ(after.store_calls - before.store_calls, 1);
    EXPECT_EQ(after.local_denials - before.local_denials, 2000);
    // A smaller cost than the one denied is not proved denied: it goes to the store.
    EXPECT_FALSE(local.hit(key, 1).allowed);
  }
}

// Exactly the limit admitted from 8 processes x 4 threads in local_first, as in exact; most denials local.
TEST(LocalFirst, ExactAcrossProcesses) {
  for (Algorithm a : {Algorithm::fixed_window, Algorithm::sliding_window, Algorithm::sliding_log,
                      Algorithm::token_bucket, Algorithm::gcra}) {
    SCOPED_TRACE(algorithm_name(a));
    const std::string key = unique_key("fleet");
    // A generous timeout: 32 callers on a loaded 2-core machine must not fail a call (what is tested is exactness).
    const std::string url = server().url() + "?mode=local_first&timeout=5s";
    const auto results = in_children(8, [&](int) -> int64_t {
      auto store = hybrid(url);
      Limiter limiter("50/minute", store, with(a));
      std::atomic<int64_t> allowed{0};
      std::vector<std::thread> threads;
      for (int t = 0; t < 4; ++t)
        threads.emplace_back([&] {
          for (int i = 0; i < 200; ++i)
            if (limiter.hit(key).allowed) ++allowed;
        });
      for (auto& t : threads) t.join();
      // allowed in the low bits, local denials above
      return allowed.load() + (store->stats().local_denials << 20);
    });
    ASSERT_EQ(results.size(), 8u);
    int64_t allowed = 0, local = 0;
    for (int64_t r : results) {
      ASSERT_GE(r, 0);
      allowed += r & ((1 << 20) - 1);
      local += r >> 20;
    }
    EXPECT_EQ(allowed, 50);
    EXPECT_GT(local, 8 * 4 * 200 / 2) << "most of the 6,350 denials should have been local";
  }
}

// A reset made by any process (here an exact-mode store, as another runtime would) reaches every process's local
// knowledge within the documented bound: max(3 syncs, 500 ms) and a round trip at worst (about one sync usually).
TEST(LocalFirst, AResetElsewhereIsSeenPromptly) {
  auto store = hybrid(server().url() + "?mode=local_first&sync=10ms");
  Limiter local("3/hour", store);
  Limiter other("3/hour", open_store(server().url()));
  std::vector<double> waits_ms;
  for (int round = 0; round < 10; ++round) {
    const std::string key = unique_key("reset");
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(local.hit(key).allowed);
    ASSERT_FALSE(local.hit(key).allowed);
    ASSERT_FALSE(local.peek(key).allowed);
    const int64_t local_before = store->stats().local_denials;
    ASSERT_FALSE(local.peek(key).allowed);
    ASSERT_GT(store->stats().local_denials, local_before);  // known locally
    const auto t0 = Clock_::now();
    other.reset(key);
    while (!local.peek(key).allowed) {
      ASSERT_LT(Clock_::now() - t0, std::chrono::seconds(2)) << "the reset was never seen";
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    waits_ms.push_back(std::chrono::duration<double, std::milli>(Clock_::now() - t0).count());
  }
  std::sort(waits_ms.begin(), waits_ms.end());
  std::printf("reset seen after (ms, sorted): ");
  for (double w : waits_ms) std::printf("%.1f ", w);
  std::printf("\n");
  EXPECT_LT(waits_ms.back(), 500 + 100);
  EXPECT_LT(waits_ms[waits_ms.size() / 2], 3 * 10 + 50);  // the median: about one sync
  EXPECT_GT(store->stats().invalidations, 0);
}

// A reset through the hybrid store itself is seen at once by that process.
TEST(LocalFirst, ItsOwnResetIsSeenAtOnce) {
  auto store = hybrid(server().url() + "?mode=local_first");
  Limiter local("2/hour", store);
  const std::string key = unique_key("own");
  local.hit(key);
  local.hit(key);
  ASSERT_FALSE(local.hit(key).allowed);
  local.reset(key);
  EXPECT_TRUE(local.hit(key).allowed);
}

// The store dies and comes back, or hangs: calls that need it fail as on_store_error says, none hangs, and exact
// answers come back with the store.
TEST(Hybrid, AStoreThatDiesOrHangs) {
  for (const char* mode : {"local_first", "async"}) {
    SCOPED_TRACE(mode);
    RedisServer own;
    auto store = hybrid(own.url() + "?mode=" + mode + "&timeout=100ms&circuit_backoff=200ms");
    LimiterOptions o;
    o.on_store_error = OnStoreError::deny;
    Limiter limiter("3/hour", store, o);
    const std::string key = unique_key("faults");
    for (int i = 0; i < 3; ++i) EXPECT_TRUE(limiter.hit(key).allowed);
    EXPECT_FALSE(limiter.hit(key).allowed);
    own.kill();
    const auto t0 = Clock_::now();
    for (int i = 0; i < 50; ++i) EXPECT_FALSE(limiter.hit(unique_key("new")).allowed);  // fail closed
    EXPECT_LT(Clock_::now() - t0, std::chrono::seconds(3));
    Limiter raising("3/hour", store);
    EXPECT_THROW(raising.hit(unique_key("new")), StoreError);
    own.start();
    bool back = false;
    for (int i = 0; i < 300 && !back; ++i) {
      try {
        back = raising.hit(unique_key("back")).allowed;
      } catch (const StoreError&) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    }
    EXPECT_TRUE(back);
    // The server came back empty: the key denied before is admitted again, as exact would, once the reset log's
    // read finds the store's data renamed (a new epoch).
    bool forgotten = false;
    for (int i = 0; i < 400 && !forgotten; ++i) {
      forgotten = raising.hit(key).allowed;
      if (!forgotten) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_TRUE(forgotten);
    own.stop();  // SIGSTOP: a hung server
    const auto t1 = Clock_::now();
    EXPECT_THROW(raising.hit(unique_key("hung")), StoreError);
    EXPECT_LT(Clock_::now() - t1, std::chrono::milliseconds(1000));
    own.cont();
  }
}

// async: P processes offering 4x the limit of a fixed window: never more than the limit per window (a lease dies
// with its window), and at most P x 2 x lease less — also with one process stopped mid-window.
TEST(Async, FixedWindowAcrossProcessesAdmitsNoMoreThanTheLimit) {
  for (bool stall : {false, true}) {
    SCOPED_TRACE(stall ? "one process stalled" : "all running");
    const std::string key = unique_key("async-fw");
    const std::string url = server().url() + "?mode=async&sync=50ms&timeout=2s";
    // 400 per second; a lease is 1% of it: 4.
    Limiter opener("400/second", open_store(server().url()));
    const auto start = Clock_::now() + std::chrono::milliseconds(300);
    std::vector<pid_t> pids;
    std::thread staller;
    if (stall)
      staller = std::thread([&] {
        std::this_thread::sleep_until(start + std::chrono::milliseconds(1200));
        if (!pids.empty()) ::kill(pids[0], SIGSTOP);
        std::this_thread::sleep_for(std::chrono::milliseconds(600));
        if (!pids.empty()) ::kill(pids[0], SIGCONT);
      });
    const auto results = in_children(
        4,
        [&](int) -> int64_t {
          auto store = hybrid(url);
          LimiterOptions o;
          o.on_store_error = OnStoreError::deny;  // the stalled process's calls in flight time out
          Limiter limiter("400/second", store, o);
          std::this_thread::sleep_until(start);
          // 1,600/s offered in all: 400 per process per second, for 3.5 windows.
          int64_t allowed = 0;
          for (int i = 0; i < 1400; ++i) {
            std::this_thread::sleep_until(start + std::chrono::microseconds(2500 * i));
            if (limiter.hit(key).allowed) ++allowed;
          }
          return allowed;
        },
        &pids);
    if (staller.joinable()) staller.join();
    int64_t allowed = 0;
    for (int64_t r : results) {
      ASSERT_GE(r, 0);
      allowed += r;
    }
    // The run covers 3.5 s: at most 4 windows begin in it, and at least 3 end in it.
    std::printf("async fixed window: %lld admitted over 3.5 windows of 400 (%s)\n", static_cast<long long>(allowed),
                stall ? "one process stalled 0.6 s" : "all running");
    EXPECT_LE(allowed, 4 * 400);
    EXPECT_GE(allowed, 3 * 400 - 4 * 2 * 4);
  }
}

// async on gcra: admitted over a run within rate x time + burst, plus at most P x 2 x lease (a lease is spent
// at most two syncs after it was charged), and not starved.
TEST(Async, GcraAcrossProcessesWithinTheDocumentedBound) {
  const std::string key = unique_key("async-gcra");
  const std::string url = server().url() + "?mode=async&sync=50ms&timeout=2s";
  const auto start = Clock_::now() + std::chrono::milliseconds(300);
  constexpr int kProcesses = 4;
  const auto results = in_children(kProcesses, [&](int) -> int64_t {
    auto store = hybrid(url);
    LimiterOptions o;
    o.algorithm = Algorithm::gcra;
    Limiter limiter("1000 per 2 seconds", store, o);  // 500/s, burst 1000; a lease is at most 10
    std::this_thread::sleep_until(start);
    int64_t allowed = 0;
    for (int i = 0; i < 2000; ++i) {  // 500/s per process, 2,000/s in all (4x), for 4 s
      std::this_thread::sleep_until(start + std::chrono::microseconds(2000 * i));
      if (limiter.hit(key).allowed) ++allowed;
    }
    return allowed + (store->stats().local_allows << 20);
  });
  int64_t allowed = 0, local = 0;
  for (int64_t r : results) {
    ASSERT_GE(r, 0);
    allowed += r & ((1 << 20) - 1);
    local += r >> 20;
  }
  const int64_t exact = 1000 + 500 * 4;  // burst + rate x 4 s
  std::printf("async gcra: %lld admitted, exact %lld, bound +-%d; %lld admitted locally\n",
              static_cast<long long>(allowed), static_cast<long long>(exact), kProcesses * 2 * 10,
              static_cast<long long>(local));
  EXPECT_LE(allowed, exact + kProcesses * 2 * 10 + 10);  // + 10: the run's end is not exact to 20 ms
  EXPECT_GE(allowed, exact - kProcesses * 2 * 10 - 10);
  EXPECT_GT(local, 0);
}

// async: a hot key is admitted locally from leases once the first round has topped them up.
TEST(Async, AHotKeyIsAdmittedLocally) {
  auto store = hybrid(server().url() + "?mode=async&sync=20ms");
  Limiter limiter("100000000/hour", store);
  const std::string key = unique_key("hot");
  int64_t allowed = 0;
  const auto t0 = Clock_::now();
  while (Clock_::now() - t0 < std::chrono::milliseconds(500))
    for (int i = 0; i < 100; ++i) allowed += limiter.hit(key).allowed;
  const StoreStats s = store->stats();
  // Leases grow with the demand seen each round (twice it, up to 1% of the limit): most hits are local soon.
  EXPECT_GT(s.local_allows, allowed / 2) << s.store_calls << " store calls";
  EXPECT_GT(s.sync_batches, 0);
}

// async: an idle process's lone hits, each after the leases the one before could have taken expired (idle past
// 20 x sync), charge the store their own cost and nothing more: no lease taken again and again to expire unspent.
// The bindings (Python, Node) ask decide_now first (hit_now), then make the call: as here. That counted each hit's
// demand twice, so every lone hit charged a spare lease of 4 with it (100 charged for these 20 hits).
TEST(Async, AnIdleProcessesLoneHitsTakeNoLeaseToExpireUnspent) {
  constexpr int64_t kSyncUs = 10000;
  ManualClock clock;
  auto store = open_store(server().url() + "?mode=async&sync=10ms", clock.clock());
  Limiter limiter("100000/hour", store);
  limiter.peek("warm-up");  // starts the rounds; local answers once the log has been read
  const auto deadline = Clock_::now() + std::chrono::seconds(20);
  while (store->stats().sync_lag_us < 0 && Clock_::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_GE(store->stats().sync_lag_us, 0);
  const std::string key = unique_key("idle");
  for (int i = 0; i < 20; ++i) {
    Decision now;
    ASSERT_FALSE(limiter.hit_now(key, 1, now));  // no lease held: not answered in-process
    ASSERT_TRUE(limiter.hit(key).allowed);
    clock.advance(21 * kSyncUs);  // idle past 20 x sync: a lease taken with this hit would have expired
    const int64_t rounds = store->stats().sync_batches;
    while (store->stats().sync_batches < rounds + 2 && Clock_::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));  // a round has ended this one's demand
  }
  Limiter plain("100000/hour", open_store(server().url(), clock.clock()));
  EXPECT_EQ(plain.peek(key).used, 20) << "cost charged to the store for leases";
  EXPECT_EQ(store->stats().local_allows, 0);
}

// A forked child never spends its parent's leases, nor trusts its parent's knowledge without reading the log.
TEST(Async, AForkedChildStartsAfresh) {
  auto store = hybrid(server().url() + "?mode=async&sync=20ms");
  Limiter limiter("100000000/hour", store);
  const std::string key = unique_key("fork");
  const auto t0 = Clock_::now();
  while (Clock_::now() - t0 < std::chrono::milliseconds(200)) limiter.hit(key);
  ASSERT_GT(store->stats().local_allows, 0);
  const auto results = in_children(1, [&](int) -> int64_t {
    limiter.hit(key);
    const StoreStats s = store->stats();  // the child's own: it has read no log yet, holds no lease
    return s.store_calls == 1 ? s.local_allows : -2;
  });
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0], 0);
}

TEST(LocalFirst, OnACluster) {
  RedisCluster cluster;
  auto store = hybrid(cluster.url() + "?mode=local_first");
  Limiter local("3/hour", store);
  Limiter other("3/hour", open_store(cluster.url()));
  for (int k = 0; k < 20; ++k) {
    const std::string key = unique_key("cluster");
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(local.hit(key).allowed);
    ASSERT_FALSE(local.hit(key).allowed);
    const int64_t before = store->stats().local_denials;
    ASSERT_FALSE(local.hit(key).allowed);
    EXPECT_EQ(store->stats().local_denials, before + 1);
    other.reset(key);
    const auto t0 = Clock_::now();
    while (!local.peek(key).allowed) {
      ASSERT_LT(Clock_::now() - t0, std::chrono::seconds(2));
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
}

// Both modes while the key's slot moves to another master under traffic: nothing fails, nothing over-admitted
// (async: the lease bound), and local answers go on.
TEST(Hybrid, ASlotMovingUnderTraffic) {
  RedisCluster cluster;
  for (const char* mode : {"local_first", "async"}) {
    SCOPED_TRACE(mode);
    auto store = hybrid(cluster.url() + "?mode=" + mode + "&timeout=2s");
    Limiter limiter("2000/hour; 100000/day", store);
    const std::string key = unique_key("moving");
    limiter.hit(key);  // the keys exist before the move
    const std::string stored = limiter.storage_key(key, 0);
    const size_t to = (cluster.master_of(stored) + 1) % cluster.size();
    std::atomic<bool> stop{false};
    std::atomic<int64_t> allowed{1}, errors{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
      threads.emplace_back([&] {
        for (int i = 0; i < 1500 || (!stop && i < 20000); ++i) {
          try {
            if (limiter.hit(key).allowed) ++allowed;
          } catch (const Error& e) {
            ++errors;
            ADD_FAILURE() << e.what();
          }
        }
      });
    // The slot moves under traffic: once the callers are deciding (and they go on until the move is done).
    const auto deadline = Clock_::now() + std::chrono::seconds(30);
    while (allowed < 50 && errors == 0 && Clock_::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    EXPECT_GE(allowed.load(), 50);
    cluster.migrate_slot_of(stored, to);
    stop = true;
    for (auto& t : threads) t.join();
    EXPECT_EQ(errors.load(), 0);
    // 2000 per hour: lease c = 20 in async, one process: at most 2c unspent.
    if (std::string(mode) == "local_first")
      EXPECT_EQ(allowed.load(), 2000);
    else
      EXPECT_GE(allowed.load(), 2000 - 40);
    EXPECT_LE(allowed.load(), 2000);
    EXPECT_EQ(cluster.master_of(stored), to);
    EXPECT_GT(store->stats().local_denials, 0);
  }
}

// A flood of distinct keys: what a process remembers stays within local_keys (a cache: it forgets, it never lies).
TEST(Hybrid, AFloodOfDistinctKeysStaysWithinLocalKeys) {
  for (const char* mode : {"local_first", "async"}) {
    SCOPED_TRACE(mode);
    auto store = hybrid(server().url() + "?mode=" + mode + "&local_keys=500&timeout=5s");  // 3,000 keys in one call
    Limiter limiter("1/hour", store);
    const std::string prefix = unique_key("flood");
    std::vector<std::string_view> keys;
    std::vector<std::string> owned;
    for (int i = 0; i < 3000; ++i) owned.push_back(prefix + ":" + std::to_string(i));
    for (const std::string& k : owned) keys.push_back(k);
    for (int round = 0; round < 2; ++round)
      for (const Decision& d : limiter.hit_many(keys)) EXPECT_EQ(d.allowed, round == 0);
    const StoreStats s = store->stats();
    EXPECT_LE(s.keys, 500);
    EXPECT_EQ(s.max_keys, 500);
    EXPECT_GT(s.evictions, 0);
    // The newest denials are known: a third pass over the last keys is answered locally.
    const int64_t before = store->stats().local_denials;
    for (size_t i = owned.size() - 50; i < owned.size(); ++i) EXPECT_FALSE(limiter.hit(owned[i]).allowed);
    EXPECT_GT(store->stats().local_denials, before);
  }
}

TEST(LocalFirst, OnAClusterExactAcrossProcesses) {
  RedisCluster cluster;
  EXPECT_EQ(allowed_across_processes(cluster.url() + "?mode=local_first", "40/minute", Algorithm::gcra, 4, 2, 60), 40);
  EXPECT_EQ(allowed_across_processes(cluster.url() + "?mode=local_first", "40/minute", Algorithm::sliding_log, 4, 2, 60),
            40);
}

}  // namespace
}  // namespace ratewarden::testing
