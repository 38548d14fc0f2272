// A hostile network between the library and its store (docs/deployment.md, "A hostile network"): Toxiproxy
// (launch.py --toxiproxy) in front of a Redis server, of each master of a Redis Cluster (which announce their
// proxies' ports, so that CLUSTER SLOTS and MOVED lead through them) and of a PostgreSQL server. Each case puts one
// fault on every proxy — latency with jitter, a bandwidth of a few KB/s, replies cut into 1-byte slices, a reset
// mid-reply, a black hole, a half-open connection, a refused connection — makes a few waves of concurrent calls
// through it, lifts it and checks that:
//   - every call is answered (a decision or a StoreError) within its timeout;
//   - no decision is applied twice: the store's own counter, read around the proxies, lies between the calls that
//     were admitted and those plus the failed calls that reached the server (a call that failed may have been
//     applied once, never twice);
//   - the circuit opens while calls fail for want of the server, fails calls at once while open, and closes within
//     one back-off once the fault is lifted; a fault that only slows calls never opens it;
//   - nothing leaks: descriptors, threads and memory come back to what they were once the store is closed, and every
//     call was answered and counted by the store (none left in flight).
// One ctest entry per store (tests/core/CMakeLists.txt): the cases of one store share its servers.

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <numeric>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "redis_server.hpp"
#include "test_support.hpp"
#include "toxiproxy.hpp"

namespace ratewarden::testing {
namespace {

using nlohmann::json;
using SteadyClock = std::chrono::steady_clock;

constexpr int64_t kBackoffMs = 300;
// What a loaded 2-core machine (and a sanitizer) may add to a call's deadline before its callback runs.
constexpr int64_t kSlackMs = 150;
constexpr int kWaves = 5;
constexpr int kWave = 4;  // calls at once: more than circuit_failures (3)
const char* const kPolicy = "100000/hour";

int64_t ms_since(SteadyClock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(SteadyClock::now() - start).count();
}

// ---- The stores behind their proxies ----

class Target {
 public:
  virtual ~Target() = default;
  // The store's URL through the proxies, with `options` ("timeout=...&...").
  virtual std::string url(const std::string& options) = 0;
  // What the store holds for `key` under kPolicy's fixed window, read around the proxies: the hits applied.
  virtual int64_t applied(const std::string& key) = 0;
  virtual std::vector<const RedisNode*> nodes() = 0;
  // The store's default call timeout (docs/deployment.md): Redis 250 ms; PostgreSQL 1 s, its first call setting the
  // schema up.
  virtual int64_t timeout_ms() const { return 250; }
  virtual const char* name() const = 0;
};

int64_t number(const std::string& text) { return text.empty() ? 0 : std::stoll(text); }
// docs/key-format.md
std::string redis_key(const std::string& key) { return "rw:{" + key + "}:v3:fixed_window:100000:3600000"; }

class RedisTarget final : public Target {
 public:
  std::string url(const std::string& options) override { return server_.proxy_url() + "?" + options; }
  int64_t applied(const std::string& key) override { return number(server_.command({"GET", redis_key(key)})); }
  std::vector<const RedisNode*> nodes() override { return {&server_}; }
  const char* name() const override { return "redis"; }

 private:
  RedisServer server_{{}, ServerOptions{false, false, false, true}};
};

class ClusterTarget final : public Target {
 public:
  std::string url(const std::string& options) override { return cluster_.proxy_url() + "?" + options; }
  int64_t applied(const std::string& key) override {
    return number(cluster_.node(cluster_.master_of(redis_key(key))).command({"GET", redis_key(key)}));
  }
  std::vector<const RedisNode*> nodes() override {
    return {&cluster_.node(0), &cluster_.node(1), &cluster_.node(2)};
  }
  const char* name() const override { return "cluster"; }
  RedisCluster& cluster() { return cluster_; }

 private:
  RedisCluster cluster_{ServerOptions{false, false, false, true}};
};

class PostgresTarget final : public Target {
 public:
  std::string url(const std::string& options) override { return server_.proxy_url("?schema=hostile&" + options); }
  int64_t applied(const std::string& key) override {
    return number(server_.sql("SELECT coalesce(sum(state[1]), 0) FROM hostile.limits WHERE key = convert_to('" +
                              redis_key(key) + "', 'UTF8')"));
  }
  std::vector<const RedisNode*> nodes() override { return {&server_}; }
  int64_t timeout_ms() const override { return 1000; }
  const char* name() const override { return "postgres"; }

 private:
  PostgresServer server_{ServerOptions{false, false, false, true}};
};

// ---- What the process holds ----

struct Census {
  int fds = 0;
  int threads = 0;
  int64_t rss_kb = 0;
};

Census census() {
  Census c;
  c.fds = proc_entries("/proc/self/fd");
  c.threads = proc_entries("/proc/self/task");
  c.rss_kb = resident_kib();
  return c;
}

// ---- The faults ----

struct Toxic {
  std::string type, stream;
  json attributes;
};

struct Fault {
  std::string name;
  std::vector<Toxic> toxics;
  bool disable = false;         // the proxy disabled: connections closed, new ones refused
  bool slows_only = false;      // every call is still answered: the circuit stays closed
  bool never_applied = false;   // nothing reaches the server: a failed call was never applied
};

std::ostream& operator<<(std::ostream& os, const Fault& f) { return os << f.name; }

std::vector<Fault> faults() {
  return {
      {"latency", {{"latency", "downstream", {{"latency", 100}, {"jitter", 50}}}}, false, true},
      {"bandwidth",
       {{"bandwidth", "downstream", {{"rate", 8}}}, {"bandwidth", "upstream", {{"rate", 8}}}}, false, true},
      // 1-byte slices, 10 µs apart (a PostgreSQL reply of 200 bytes takes 20 ms or more)
      {"slicer", {{"slicer", "downstream", {{"average_size", 1}, {"size_variation", 0}, {"delay", 10}}}}, false, true},
      // The connection closes after 3 bytes of the next reply (the first bytes since the toxic came), or of the
      // handshake of a new connection.
      {"reset_mid_reply", {{"limit_data", "downstream", {{"bytes", 3}}}}},
      // The reply's first bytes dropped and the connection reset (RST on connections made since).
      {"reset_peer", {{"reset_peer", "downstream", {{"timeout", 0}}}}},
      // Data accepted by the proxy, nothing passed on either way.
      {"black_hole", {{"timeout", "upstream", {{"timeout", 0}}}}, false, false, true},
      // Half-open: requests reach the server (and apply), nothing comes back, and nothing says the connection died.
      {"half_open", {{"timeout", "downstream", {{"timeout", 0}}}}},
      // Nobody listens: connections closed, new ones refused.
      {"refused", {}, true, false, false},
  };
}

// ---- One call's outcome ----

struct Outcome {
  int64_t ms = 0;
  bool ok = false;
  bool allowed = false;
  bool not_tried = false;  // refused by the open circuit: never sent
  ErrorCode code = ErrorCode::internal;
  std::string message;
};

// The failures in a row an open circuit's refusal tells of ("not tried: 4 calls in a row failed ..."), or -1.
int failures_told(const Outcome& o) {
  const std::string told = "not tried: ";
  const size_t at = o.message.find(told);
  return at == std::string::npos ? -1 : std::atoi(o.message.c_str() + at + told.size());
}

// Makes `n` hit_async calls at once on `key` and waits for every answer (for at most 10 s).
std::vector<Outcome> wave(Limiter& limiter, const std::string& key, int n) {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<Outcome> outcomes;
  for (int i = 0; i < n; ++i) {
    const auto start = SteadyClock::now();
    limiter.hit_async(
        key, 1,
        [&, start](const Decision* d, const Error* e) {
          Outcome o;
          o.ms = ms_since(start);
          o.ok = d != nullptr;
          o.allowed = d != nullptr && d->allowed;
          if (e != nullptr) {
            o.code = e->code();
            o.message = e->what();
            o.not_tried = o.message.find("not tried") != std::string::npos;
          }
          std::lock_guard<std::mutex> lock(mu);
          outcomes.push_back(o);
          cv.notify_all();
        },
        Completion::any_thread);
  }
  std::unique_lock<std::mutex> lock(mu);
  cv.wait_for(lock, std::chrono::seconds(10), [&] { return static_cast<int>(outcomes.size()) == n; });
  return outcomes;
}

int64_t total_calls(const StoreStats& s) { return std::accumulate(s.calls.begin(), s.calls.end(), int64_t{0}); }

// Closes the store and waits (5 s at most) until the I/O thread has closed its connections; whether it did.
bool close_and_wait(Store& store) {
  store.close();
  const auto start = SteadyClock::now();
  while (store.stats().connections_open != 0 && ms_since(start) < 5000)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  return store.stats().connections_open == 0;
}

// The figures of a fault (docs/deployment.md quotes them): the calls under it by outcome, their times, how soon the
// store served again once it was lifted, and what the store applied.
void report(const Target& target, const Fault& fault, const std::vector<std::vector<Outcome>>& waves, int64_t recovered_ms,
            int64_t admitted, int64_t maybe, int64_t applied) {
  std::vector<int64_t> answered;
  int timeouts = 0, unavailable = 0, not_tried = 0;
  int64_t slowest = 0;
  for (const auto& w : waves) {
    for (const Outcome& o : w) {
      slowest = std::max(slowest, o.ms);
      if (o.ok) answered.push_back(o.ms);
      else if (o.not_tried) ++not_tried;
      else if (o.code == ErrorCode::store_timeout) ++timeouts;
      else ++unavailable;
    }
  }
  std::sort(answered.begin(), answered.end());
  std::printf("  %-8s %-15s %d answered (median %lld ms), %d timed out, %d cut or refused, %d failed at once (circuit "
              "open); slowest %lld ms; served again %lld ms after the fault went; the store applied %lld hits: %lld "
              "admitted + %lld of %lld failed after being sent\n",
              target.name(), fault.name.c_str(), static_cast<int>(answered.size()),
              static_cast<long long>(answered.empty() ? 0 : answered[answered.size() / 2]), timeouts, unavailable,
              not_tried, static_cast<long long>(slowest), static_cast<long long>(recovered_ms),
              static_cast<long long>(applied), static_cast<long long>(admitted),
              static_cast<long long>(applied - admitted), static_cast<long long>(maybe));
}

// ---- The scenario ----

void survive(Target& target, const Fault& fault) {
  const std::string key = "hostile-" + fault.name;
  const int64_t timeout_ms = target.timeout_ms();
  const std::string options = "timeout=" + std::to_string(timeout_ms) + "ms&circuit_backoff=" +
                              std::to_string(kBackoffMs) + "ms&circuit_failures=3&pool=2";
  LimiterOptions fixed;
  fixed.algorithm = Algorithm::fixed_window;
  const Toxiproxy toxiproxy = target.nodes()[0]->toxiproxy();
  toxiproxy.reset();

  // A first store of this kind and its closing: the library's thread, libpq, OpenSSL loaded once for all. (Tried
  // again for up to 10 s: a machine busy with other tests may take longer than a timeout to set a connection up,
  // through the proxy, before any fault.)
  {
    auto store = open_store(target.url(options));
    Limiter warm_up(kPolicy, store, fixed);
    const auto start = SteadyClock::now();
    for (std::vector<Outcome> one; (one = wave(warm_up, "hostile-warm-up", 1)).empty() || !one[0].ok;) {
      ASSERT_LT(ms_since(start), 10000) << fault << ": the store never served";
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ASSERT_TRUE(close_and_wait(*store));
  }
  const Census before = census();

  std::vector<Outcome> all;
  int64_t openings_before = 0;
  {
    auto store = open_store(target.url(options));
    Limiter limiter(kPolicy, store, fixed);
    // Every pooled connection open and used (again, for up to 10 s, as the warm-up above).
    const auto opening = SteadyClock::now();
    bool warm = false;
    while (!warm && ms_since(opening) < 10000) {
      warm = true;
      for (const Outcome& o : wave(limiter, key, kWave)) {
        warm = warm && o.allowed;
        all.push_back(o);
      }
    }
    ASSERT_TRUE(warm) << fault << ": the store did not serve before the fault";
    openings_before = store->stats().circuit_openings;

    for (const RedisNode* node : target.nodes()) {
      for (size_t i = 0; i < fault.toxics.size(); ++i)
        toxiproxy.add(node->proxy(), "t" + std::to_string(i), fault.toxics[i].type, fault.toxics[i].stream,
                      fault.toxics[i].attributes);
      if (fault.disable) toxiproxy.enable(node->proxy(), false);
    }
    std::vector<std::vector<Outcome>> waves;
    bool open_seen = false;
    for (int w = 0; w < kWaves; ++w) {
      waves.push_back(wave(limiter, key, kWave));
      ASSERT_EQ(waves.back().size(), static_cast<size_t>(kWave)) << fault << ": a call was never answered";
      all.insert(all.end(), waves.back().begin(), waves.back().end());
      open_seen = open_seen || store->stats().circuits_open > 0;
    }
    for (size_t w = 0; w < waves.size(); ++w) {
      for (const Outcome& o : waves[w]) {
        EXPECT_LE(o.ms, timeout_ms + kSlackMs) << fault << ", wave " << w << ": " << o.message;
        if (fault.slows_only) {
          EXPECT_TRUE(o.allowed) << fault << ", wave " << w << ": " << o.message;
        } else {
          EXPECT_FALSE(o.ok) << fault << ", wave " << w << ": a call went through";
        }
        if (o.not_tried) {
          EXPECT_LT(o.ms, 50) << fault << ": an open circuit fails calls at once";
        }
      }
    }
    const StoreStats during = store->stats();
    if (fault.slows_only) {
      EXPECT_EQ(during.circuit_openings, openings_before) << fault << ": slow calls opened the circuit";
    } else {
      EXPECT_TRUE(open_seen) << fault << ": the circuit never opened";
      EXPECT_GT(during.circuit_openings, openings_before) << fault;
      const auto refused = std::count_if(waves.back().begin(), waves.back().end(),
                                         [](const Outcome& o) { return o.not_tried; });
      EXPECT_GT(refused, 0) << fault << ": the last wave still waited for the server";
      // After the back-off one call goes as the probe; the fault still there, it fails and the circuit opens again
      // for another back-off. On a cluster the probe may be a read of the slot map instead of ours, back-off after
      // back-off (its refresh, refused while the circuit is open, is tried again when the back-off ends: often
      // first): its failure shows as one more failure in a row in the refusals that follow.
      const auto waiting = SteadyClock::now();
      std::vector<Outcome> probe;
      int told_first = -1;
      bool probed_by_another = false;
      do {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        probe = wave(limiter, key, 1);
        ASSERT_EQ(probe.size(), 1u);
        all.push_back(probe[0]);
        if (told_first < 0) told_first = failures_told(probe[0]);
        probed_by_another = told_first >= 0 && failures_told(probe[0]) > told_first;
      } while (probe[0].not_tried && !probed_by_another && ms_since(waiting) < 10000);
      EXPECT_TRUE(!probe[0].not_tried || probed_by_another) << fault << ": no probe in 10 s: " << probe[0].message;
      if (!probe[0].not_tried) {
        EXPECT_FALSE(probe[0].ok) << fault << ": the probe went through the fault";
        EXPECT_LE(probe[0].ms, timeout_ms + kSlackMs) << fault;
      }
      const std::vector<Outcome> after_probe = wave(limiter, key, 1);
      ASSERT_EQ(after_probe.size(), 1u);
      all.push_back(after_probe[0]);
      EXPECT_TRUE(after_probe[0].not_tried) << fault << ": the failed probe did not open the circuit again: "
                                            << after_probe[0].message;
      EXPECT_GT(store->stats().circuits_open, 0) << fault;
    }

    // Lifted: the store serves again within one back-off (and the probe's round trip).
    toxiproxy.reset();
    const auto lifted = SteadyClock::now();
    bool served = false;
    std::string failures;  // of the calls before the store served again, but for the refusals of the open circuit
    while (!served && ms_since(lifted) < 3000) {
      std::vector<Outcome> one = wave(limiter, key, 1);
      ASSERT_EQ(one.size(), 1u);
      all.push_back(one[0]);
      served = one[0].allowed;
      if (!served && !one[0].not_tried)
        failures += "\n  at " + std::to_string(ms_since(lifted)) + " ms, " + std::to_string(one[0].ms) + " ms: " +
                    one[0].message;
      if (!served) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    const int64_t recovered_ms = ms_since(lifted);
    EXPECT_TRUE(served) << fault << failures;
    EXPECT_LE(recovered_ms, kBackoffMs + timeout_ms + kSlackMs)
        << fault << ": the circuit did not close in time" << failures;
    // Every circuit closed, each by a call of its own: a cluster's other masters (whose circuits the slot map's
    // reads opened) by calls on keys they serve.
    int64_t spread_calls = 0;
    while (store->stats().circuits_open != 0 && ms_since(lifted) < 3000) {
      for (int i = 0; i < 12; ++i, ++spread_calls) wave(limiter, "hostile-spread-" + std::to_string(i), 1);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    EXPECT_EQ(store->stats().circuits_open, 0) << fault;

    // Every call answered and counted by the store: none in flight.
    EXPECT_EQ(total_calls(store->stats()), static_cast<int64_t>(all.size()) + spread_calls) << fault;

    // No decision applied twice.
    int64_t admitted = 0, maybe = 0;
    for (const Outcome& o : all) {
      admitted += o.allowed;
      maybe += !o.ok && !o.not_tried;
    }
    const int64_t applied = target.applied(key);
    report(target, fault, waves, recovered_ms, admitted, maybe, applied);
    EXPECT_GE(applied, admitted) << fault;
    EXPECT_LE(applied, admitted + maybe) << fault << ": a decision was applied twice";
    if (fault.never_applied) {
      EXPECT_EQ(applied, admitted) << fault;
    }

    EXPECT_TRUE(close_and_wait(*store)) << fault << ": connections left open";
  }

  // Nothing left behind: waited for, the I/O thread closing sockets on its own time.
  Census after = census();
  const auto closed = SteadyClock::now();
  while ((after.fds != before.fds || after.threads != before.threads) && ms_since(closed) < 5000) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    after = census();
  }
  EXPECT_EQ(after.fds, before.fds) << fault << ": descriptors leaked";
  EXPECT_EQ(after.threads, before.threads) << fault;
  EXPECT_LT(after.rss_kb - before.rss_kb, 8 * 1024) << fault << ": memory grew";
}

// ---- The cases: one fixture per store, its servers started once ----

RedisTarget& redis_target() {
  static RedisTarget t;
  return t;
}
ClusterTarget& cluster_target() {
  static ClusterTarget t;
  return t;
}
PostgresTarget& postgres_target() {
  static PostgresTarget t;
  return t;
}

std::string fault_name(const ::testing::TestParamInfo<Fault>& info) { return info.param.name; }

class Redis : public ::testing::TestWithParam<Fault> {};
TEST_P(Redis, SurvivesTheFault) { survive(redis_target(), GetParam()); }
INSTANTIATE_TEST_SUITE_P(Faults, Redis, ::testing::ValuesIn(faults()), fault_name);

class Cluster : public ::testing::TestWithParam<Fault> {};
TEST_P(Cluster, SurvivesTheFault) { survive(cluster_target(), GetParam()); }
INSTANTIATE_TEST_SUITE_P(Faults, Cluster, ::testing::ValuesIn(faults()), fault_name);

class Postgres : public ::testing::TestWithParam<Fault> {};
TEST_P(Postgres, SurvivesTheFault) { survive(postgres_target(), GetParam()); }
INSTANTIATE_TEST_SUITE_P(Faults, Postgres, ::testing::ValuesIn(faults()), fault_name);

// The masters announce their proxies: CLUSTER SLOTS names only proxy ports, so that the library's calls (and
// MOVED's) go through Toxiproxy, and a master whose proxy is down is out of reach.
TEST(ClusterThroughProxies, TheMastersAnnounceTheirProxies) {
  RedisCluster& cluster = cluster_target().cluster();
  std::vector<int> proxies;
  for (size_t i = 0; i < cluster.size(); ++i) proxies.push_back(cluster.node(i).proxy_port());
  const std::string slots = cluster.node(0).command({"CLUSTER", "SLOTS"});
  // The reply flattened one value a line: start, end, host, port, id for each range.
  std::vector<std::string> lines;
  for (size_t at = 0, end; at <= slots.size(); at = end + 1) {
    end = std::min(slots.find('\n', at), slots.size());
    lines.push_back(slots.substr(at, end - at));
  }
  int ports = 0;
  for (size_t i = 0; i + 1 < lines.size(); ++i) {
    if (lines[i] != "127.0.0.1") continue;
    ++ports;
    EXPECT_NE(std::find(proxies.begin(), proxies.end(), std::stoi(lines[i + 1])), proxies.end()) << slots;
  }
  EXPECT_EQ(ports, 3) << slots;

  const std::string key = "through-proxies";
  const RedisNode& master = cluster.node(cluster.master_of(redis_key(key)));
  const Toxiproxy toxiproxy = master.toxiproxy();
  Limiter limiter(kPolicy, open_store(cluster.proxy_url() + "?timeout=250ms&circuit_failures=0"));
  EXPECT_TRUE(limiter.hit(key).allowed);
  toxiproxy.enable(master.proxy(), false);
  EXPECT_THROW(limiter.hit(key), StoreError);
  toxiproxy.reset();
  EXPECT_TRUE(limiter.hit(key).allowed);
}

}  // namespace
}  // namespace ratewarden::testing
