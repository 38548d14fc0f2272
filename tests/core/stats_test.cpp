// The figures (ratewarden/stats.hpp) and events (ratewarden/events.hpp): counted as the calls were made, on the
// memory store and on a real redis-server that dies; bounded; never going back when limiters and stores go.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include <gtest/gtest.h>

#include "metrics/emit.hpp"
#include "ratewarden/events.hpp"
#include "ratewarden/limiter.hpp"
#include "ratewarden/memory_store.hpp"
#include "ratewarden/metric_families.hpp"
#include "ratewarden/stats.hpp"
#include "redis_server.hpp"
#include "test_support.hpp"

namespace ratewarden::testing {
namespace {

// Collects the events the handler gets; waits for them without sleeping a fixed time.
class Events {
 public:
  Events() {
    set_event_handler([this](const Event& e) {
      std::lock_guard<std::mutex> lock(mu_);
      seen_.push_back(e);
      cv_.notify_all();
    });
  }
  ~Events() { set_event_handler(nullptr); }

  // The events seen once `done` holds of them (or after 20 s, for the assertion to fail on).
  template <typename Done>
  std::vector<Event> wait(Done done) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, std::chrono::seconds(20), [&] { return done(seen_); });
    return seen_;
  }
  std::vector<Event> wait_for_kind(EventKind kind) {
    return wait([kind](const std::vector<Event>& seen) {
      for (const Event& e : seen)
        if (e.kind == kind) return true;
      return false;
    });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Event> seen_;
};

const LimiterStats* find_limiter(const std::vector<LimiterStats>& all, const std::string& name) {
  for (const LimiterStats& s : all)
    if (s.name == name) return &s;
  return nullptr;
}

const StoreStats* find_store(const std::vector<StoreStats>& all, const std::string& name) {
  for (const StoreStats& s : all)
    if (s.name == name) return &s;
  return nullptr;
}

int64_t total(const DurationHistogram& h) {
  int64_t n = 0;
  for (int64_t b : h.buckets) n += b;
  return n;
}

TEST(LimiterStats, CountsHitsAndReservationsOnTheMemoryStoreNotPeeks) {
  ManualClock clock;
  LimiterOptions options;
  options.name = "login";
  Limiter limiter("3/minute", memory_store(clock), options);
  for (int i = 0; i < 5; ++i) limiter.hit("alice");
  limiter.hit("bob", 2);
  limiter.peek("carol");
  limiter.hit_many({"carol", "dave"});
  const LimiterStats s = limiter.stats();
  EXPECT_EQ(s.name, "login");
  EXPECT_EQ(s.allowed, 3 + 1 + 2);
  EXPECT_EQ(s.denied, 2);
  EXPECT_EQ(s.cost, 3 + 2 + 2);
  EXPECT_EQ(s.fallbacks, 0);

  LimiterOptions gcra = with_algorithm(Algorithm::gcra);
  gcra.name = "reserve";
  Limiter reserving("1/second", memory_store(clock), gcra);
  EXPECT_TRUE(reserving.reserve("k", 1, 5000000).allowed);
  EXPECT_TRUE(reserving.reserve("k", 1, 5000000).allowed);
  EXPECT_FALSE(reserving.reserve("k", 1, 0).allowed);
  EXPECT_EQ(reserving.stats().allowed, 2);
  EXPECT_EQ(reserving.stats().denied, 1);
}

TEST(LimiterStats, CountsFromManyThreadsExactly) {
  Limiter limiter("1000000/hour", std::make_shared<MemoryStore>());
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20000; ++i) limiter.hit("k" + std::to_string((t * 7 + i) % 300));
    });
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(limiter.stats().allowed, 80000);
  EXPECT_EQ(limiter.stats().denied, 0);
}

TEST(LimiterStats, DefaultNameIsThePolicyStringAndBadNamesAreRefused) {
  Limiter limiter("  10/minute; 100/hour ", std::make_shared<MemoryStore>());
  EXPECT_EQ(limiter.stats().name, "10/minute; 100/hour");
  LimiterOptions options;
  options.name = "";
  EXPECT_THROW(Limiter("1/second", std::make_shared<MemoryStore>(), options), InvalidArgument);
  options.name = std::string(201, 'x');
  EXPECT_THROW(Limiter("1/second", std::make_shared<MemoryStore>(), options), InvalidArgument);
}

TEST(LimiterStats, ANamesCountersKeepWhatGoneLimitersCountedAndSumTheLiveOnes) {
  LimiterOptions options;
  options.name = "api";
  auto store = std::make_shared<MemoryStore>();
  {
    Limiter gone("2/minute", store, options);
    for (int i = 0; i < 3; ++i) gone.hit("x");
  }
  Limiter a("2/minute", store, options);
  Limiter b("5/minute", open_store("memory://"), options);
  a.hit("y");
  b.hit("z");
  const std::vector<LimiterStats> all = process_limiter_stats();
  const LimiterStats* api = find_limiter(all, "api");
  ASSERT_NE(api, nullptr);
  EXPECT_EQ(api->allowed, 2 + 1 + 1);
  EXPECT_EQ(api->denied, 1);
}

TEST(LimiterStats, NamesPastTheBoundAreCountedAsOther) {
  auto store = std::make_shared<MemoryStore>();
  LimiterOptions options;
  for (size_t i = 0; i < kMaxNames + 5; ++i) {
    options.name = "n" + std::to_string(i);
    Limiter("1/second", store, options).hit("k" + std::to_string(i));
  }
  const std::vector<LimiterStats> all = process_limiter_stats();
  EXPECT_LE(all.size(), kMaxNames + 1);
  const LimiterStats* other = find_limiter(all, "other");
  ASSERT_NE(other, nullptr);
  EXPECT_GE(other->allowed, 5);
}

TEST(StoreStats, MemoryStoreCountsExpiredDropsAndLiveEvictionsAndTellsOfThemOnce) {
  Events events;
  ManualClock clock;
  auto store = memory_store(clock, 64);
  Limiter limiter("1/second", store);
  for (int i = 0; i < 64; ++i) limiter.hit("a" + std::to_string(i));
  clock.advance(2000000);  // every one expired
  for (int i = 0; i < 64; ++i) limiter.hit("b" + std::to_string(i));
  EXPECT_EQ(store->stats().expired_drops, 64);
  EXPECT_EQ(store->stats().evictions, 0);
  for (int i = 0; i < 1000; ++i) limiter.hit("c" + std::to_string(i));  // live ones must go
  EXPECT_EQ(store->stats().evictions, 1000);
  const std::vector<Event> seen = events.wait_for_kind(EventKind::live_evictions);
  int evictions = 0;
  for (const Event& e : seen) evictions += e.kind == EventKind::live_evictions;
  EXPECT_EQ(evictions, 1) << "a flood of evictions in one (manual) second is one event";
  EXPECT_EQ(seen[0].store, store->describe());
  EXPECT_NE(seen[0].message.find("raise max_keys"), std::string::npos) << seen[0].message;
}

TEST(Events, OneASecondPerSourceTheLastOneDeliveredWithTheOthersCounted) {
  Events events;
  emit_event(EventKind::store_failed, "s", "down 1");
  for (int i = 0; i < 4; ++i)
    emit_event(i % 2 == 0 ? EventKind::store_recovered : EventKind::store_failed, "s", "flap " + std::to_string(i));
  emit_event(EventKind::store_failed, "t", "another store: its own limit");
  const std::vector<Event> seen = events.wait([](const std::vector<Event>& s) { return s.size() >= 3; });
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[0].message, "down 1");
  EXPECT_EQ(seen[1].message, "another store: its own limit");
  // The last of the second, so that the state last told is the store's: failed ("flap 3").
  EXPECT_EQ(seen[2].message, "flap 3");
  EXPECT_EQ(seen[2].kind, EventKind::store_failed);
  EXPECT_EQ(seen[2].suppressed, 3);
}

TEST(StoreStats, RedisCallsByOutcomeCircuitAndEventsWhenTheServerDiesAndComesBack) {
  Events events;
  RedisServer server;
  const std::string url =
      server.url() + "?timeout=200ms&connect_timeout=200ms&pool=2&circuit_failures=2&circuit_backoff=50ms";
  std::shared_ptr<Store> store = open_store(url);
  LimiterOptions options;
  options.on_store_error = OnStoreError::allow;
  options.name = "redis-login";
  auto limiter = std::make_unique<Limiter>("100/minute", store, options);
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(limiter->hit("k").allowed);
  StoreStats s = store->stats();
  EXPECT_EQ(s.calls[static_cast<size_t>(CallOutcome::ok)], 10);
  EXPECT_EQ(total(s.durations[0]), 10);
  EXPECT_EQ(s.durations[0].count, 10);
  EXPECT_GT(s.durations[0].sum_seconds, 0);
  EXPECT_GE(s.connections_open, 1);
  EXPECT_LE(s.connections_open, 2);  // the pool
  EXPECT_EQ(s.circuits_open, 0);

  server.kill();
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(limiter->hit("k").allowed);  // on_store_error = allow
  EXPECT_EQ(limiter->stats().fallbacks, 5);
  EXPECT_EQ(limiter->stats().allowed, 15);
  s = store->stats();
  EXPECT_EQ(s.calls[static_cast<size_t>(CallOutcome::unavailable)] + s.calls[static_cast<size_t>(CallOutcome::timeout)],
            5);
  EXPECT_EQ(s.circuits_open, 1);
  EXPECT_EQ(s.circuit_openings, 1);
  EXPECT_EQ(s.connections_open, 0);
  events.wait_for_kind(EventKind::circuit_opened);
  events.wait_for_kind(EventKind::store_failed);

  server.start();
  // Calls fail at once while the circuit is open; the first after the back-off probes and closes it.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (store->stats().circuits_open != 0 && std::chrono::steady_clock::now() < deadline) limiter->hit("k");
  EXPECT_EQ(store->stats().circuits_open, 0);
  const std::vector<Event> seen = events.wait_for_kind(EventKind::store_recovered);
  events.wait_for_kind(EventKind::circuit_closed);
  for (const Event& e : seen) EXPECT_EQ(e.store, store->describe()) << event_kind_name(e.kind);

  // The process's figures for the store's name; they stay when the store goes.
  const int64_t ok_calls = store->stats().calls[0];
  limiter.reset();
  store.reset();
  const std::vector<StoreStats> all = process_store_stats();
  const StoreStats* kept = find_store(all, s.name);
  ASSERT_NE(kept, nullptr);
  EXPECT_EQ(kept->calls[0], ok_calls);
  EXPECT_EQ(kept->connections_open, 0);
  EXPECT_EQ(kept->circuits_open, 0);
}

// What `promtool check metrics` (Debian's prometheus package) says of `text`: empty when it has nothing to say.
std::string promtool_check(const std::string& text) {
  char path[] = "/tmp/rw-metrics-XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0 || write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size())) return "cannot write";
  close(fd);
  FILE* p = popen(("promtool check metrics < " + std::string(path) + " 2>&1").c_str(), "r");
  std::string out;
  char buf[512];
  while (p != nullptr && fgets(buf, sizeof buf, p) != nullptr) out += buf;
  const int status = p != nullptr ? pclose(p) : -1;
  unlink(path);
  return status == 0 ? out : "promtool failed (" + std::to_string(status) + "): " + out;
}

// Families are added to while a histogram family is being filled: 0, 1, 3 or 7 families before the first network
// store's used to move it (a vector that grew) under the reference being filled.
// sync_lag_us has one meaning for every store: the age of the last read of the reset log, -1 while none has been
// made — every store but a hybrid mode's always, a hybrid mode's until its first read; merged figures take the
// largest, -1 only when no store has read; a store gone leaves -1 in its name's figures.
TEST(StoreStats, SyncLagIsMinusOneForEveryStoreThatHasReadNoResetLog) {
  RedisServer server;
  for (const std::string& url : {std::string("memory://"), server.url()}) {
    std::shared_ptr<Store> store = open_store(url);
    Limiter("5/minute", store).hit("k");
    EXPECT_EQ(store->stats().sync_lag_us, -1) << url;
    const std::vector<StoreStats> all = process_store_stats();
    const StoreStats* named = find_store(all, store->describe());
    ASSERT_NE(named, nullptr);
    EXPECT_EQ(named->sync_lag_us, -1) << url;
  }
  std::shared_ptr<Store> hybrid = open_store(server.url() + "?mode=local_first&sync=10ms");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (hybrid->stats().sync_lag_us < 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_GE(hybrid->stats().sync_lag_us, 0);
  StoreStats merged;
  EXPECT_EQ(merged.sync_lag_us, -1);
  merged += StoreStats();
  EXPECT_EQ(merged.sync_lag_us, -1);
  merged += hybrid->stats();
  EXPECT_GE(merged.sync_lag_us, 0);
  const std::string name = hybrid->describe();
  hybrid.reset();
  const std::vector<StoreStats> all = process_store_stats();
  const StoreStats* gone = find_store(all, name);
  ASSERT_NE(gone, nullptr);
  EXPECT_EQ(gone->sync_lag_us, -1);
}

TEST(Events, AsyncLeasesThatExpireUnusedAreToldUnderTheHybridStoresName) {
  RedisServer server;
  std::shared_ptr<Store> store = open_store(server.url() + "?mode=async&sync=10ms");
  Limiter limiter("1000/second", store);
  Events events;
  // Hits until the process admits from a lease (the key is hot), then none: what the leases hold expires unused.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (store->stats().local_allows == 0 && std::chrono::steady_clock::now() < deadline) {
    for (int i = 0; i < 20; ++i) ASSERT_TRUE(limiter.hit("hot").allowed);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // pacing the load, not waiting for a result
  }
  ASSERT_GT(store->stats().local_allows, 0);
  for (const Event& e : events.wait_for_kind(EventKind::lease_expired)) {
    if (e.kind != EventKind::lease_expired) continue;
    EXPECT_EQ(e.store, store->describe());
    EXPECT_NE(e.message.find("expired unused"), std::string::npos) << e.message;
    EXPECT_FALSE(is_warning(e.kind));
    return;
  }
  FAIL() << "no lease_expired event";
}

TEST(MetricFamilies, AnyNumberOfFamiliesBeforeANetworkStoresAreSafe) {
  for (size_t limiters = 0; limiters < 9; ++limiters) {
    std::vector<LimiterStats> l(limiters);
    for (size_t i = 0; i < limiters; ++i) l[i].name = "l" + std::to_string(i);
    StoreStats redis;
    redis.name = "redis://127.0.0.1:1/0";
    redis.network = true;
    redis.calls[1] = 2;
    redis.durations[1].buckets[3] = 2;
    redis.durations[1].count = 2;
    const std::string text = prometheus_text(metric_families(std::vector<LimiterStats>(l.begin(), l.end()), {redis}));
    EXPECT_NE(text.find("ratewarden_store_errors_total{store=\"redis://127.0.0.1:1/0\",kind=\"timeout\"} 2\n"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("ratewarden_store_call_duration_seconds_count{store=\"redis://127.0.0.1:1/0\","
                        "outcome=\"timeout\"} 2\n"),
              std::string::npos)
        << text;
  }
}

// The catalog (what exporters declare before any figure exists: the OpenTelemetry instruments) has every family that
// figures of any kind give, with the same type, unit and label names; a unit is "s" exactly for the _seconds
// families, what is counted in braces for the others.
TEST(MetricFamilies, TheCatalogHasEveryFamilyWithItsTypeUnitAndLabels) {
  const std::vector<MetricFamily> catalog = metric_catalog();
  auto label_names = [](const MetricFamily& f) {
    const Labels& labels = !f.samples.empty() ? f.samples[0].labels : f.histograms.at(0).labels;
    std::vector<std::string> names;
    for (const auto& label : labels) names.push_back(label.first);
    return names;
  };
  LimiterStats limiter;
  limiter.name = "l";
  StoreStats memory, redis, hybrid, postgres;
  memory.name = "memory://";
  redis.name = "redis://127.0.0.1:1/0";
  redis.network = true;
  hybrid.name = "redis://127.0.0.1:1/0?mode=async";
  hybrid.network = hybrid.hybrid = true;
  postgres.name = "postgres://127.0.0.1:1/db";
  postgres.network = true;
  postgres.pool_size = 4;
  const std::vector<MetricFamily> all = metric_families({limiter}, {memory, redis, hybrid, postgres});
  ASSERT_EQ(all.size(), catalog.size());
  for (const MetricFamily& f : all) {
    const auto in_catalog = std::find_if(catalog.begin(), catalog.end(), [&](const MetricFamily& c) {
      return c.name == f.name;
    });
    ASSERT_NE(in_catalog, catalog.end()) << f.name;
    const MetricFamily& c = *in_catalog;
    EXPECT_EQ(c.type, f.type) << f.name;
    EXPECT_EQ(c.unit, f.unit) << f.name;
    EXPECT_EQ(c.help, f.help) << f.name;
    EXPECT_EQ(label_names(c), label_names(f)) << f.name;
    const bool seconds = f.name.size() > 8 && f.name.compare(f.name.size() - 8, 8, "_seconds") == 0;
    if (seconds) {
      EXPECT_EQ(f.unit, "s") << f.name;
    } else {
      EXPECT_TRUE(f.unit.size() > 2 && f.unit.front() == '{' && f.unit.back() == '}') << f.name << ": " << f.unit;
    }
  }
}

TEST(MetricFamilies, EveryStoreKindsSeriesPassPromtoolAndCountWhatWasDone) {
  RedisServer server;
  LimiterOptions options;
  options.name = "login \"quoted\"\nname";
  Limiter memory("2/minute", open_store("memory://?max_keys=100"), options);
  for (int i = 0; i < 3; ++i) memory.hit("k");
  Limiter redis("5/minute", open_store(server.url()), options);
  redis.hit("k");
  Limiter hybrid("5/minute", open_store(server.url() + "?mode=local_first"), options);
  hybrid.hit("k");
  const std::string text = prometheus_text(metric_families());
  EXPECT_EQ(promtool_check(text), "") << text;
  const std::string name = "limiter=\"login \\\"quoted\\\"\\nname\"";
  EXPECT_NE(text.find("ratewarden_decisions_total{" + name + ",outcome=\"allowed\"} 4\n"), std::string::npos) << text;
  EXPECT_NE(text.find("ratewarden_decisions_total{" + name + ",outcome=\"denied\"} 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("ratewarden_memory_max_keys{store=\"memory://?max_keys=100&shards=1\"} 100\n"),
            std::string::npos)
      << text;
  const std::string calls = "ratewarden_store_call_duration_seconds_count{store=\"" + redis.store()->describe() +
                            "\",outcome=\"ok\"} ";
  EXPECT_NE(text.find(calls), std::string::npos) << text;
  EXPECT_NE(text.find("le=\"+Inf\""), std::string::npos);
  EXPECT_NE(text.find("ratewarden_hybrid_sync_lag_seconds{store=\"" + hybrid.store()->describe()), std::string::npos)
      << text;
  EXPECT_EQ(text.find("ratewarden_memory_keys{store=\"redis"), std::string::npos) << "no memory series for Redis";

  // Every series the Grafana dashboard (examples/grafana/ratewarden.json) queries is in the scrape.
  std::ifstream dashboard(std::string(RATEWARDEN_SOURCE_DIR) + "/examples/grafana/ratewarden.json");
  const std::string json((std::istreambuf_iterator<char>(dashboard)), std::istreambuf_iterator<char>());
  const std::regex metric("ratewarden_[a-z_]+");
  int queried = 0;
  for (auto it = std::sregex_iterator(json.begin(), json.end(), metric); it != std::sregex_iterator(); ++it) {
    ++queried;
    EXPECT_NE(text.find("\n" + it->str()), std::string::npos) << it->str() << " is not in a scrape";
  }
  EXPECT_GE(queried, 8);
}

}  // namespace
}  // namespace ratewarden::testing
