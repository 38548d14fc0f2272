// The C++ rows of issue 21's table, through the public API only: Limiter::hit on the memory store for one hot key,
// for 1,000,000 distinct keys (without eviction and at the default bound), from two threads against one, and with
// two policies against one; plus a bare std::unordered_map fixed window, the floor of any hand-written check, and
// three parts of a hit, the keyed hash, the shard's lock and the clock read (for information). bench/in_process.sh runs this against governor (bench/peers/governor) and prints the ratios.
//
// Prints one JSON line per case on stdout: {"bench":"cpp","case":...,"ns":<median ns per call>,"per_s":...,
// "rounds":N}; store cases add the store's stats() after the run ("evictions" > 0: the case includes eviction
// churn). Time is CPU time (Google Benchmark's default; the governor peer measures the same), except for the
// threaded case: its throughput is in wall time, beside the cores its threads got. Google Benchmark's own report
// goes to stderr. --rounds=N (default 5) runs each case N times, each for at
// least 0.3 s; in_process.sh passes --rounds=1 and interleaves the processes with governor's.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "ratewarden/ratewarden.hpp"
#include "util/fast_clock.hpp"
#include "util/lock.hpp"
#include "util/siphash.hpp"

namespace {

// in_process.sh also builds the core without its decision counters (RATEWARDEN_METRICS=OFF), to measure them.
#ifdef RATEWARDEN_BENCH_NO_METRICS
constexpr const char* kBenchName = "cpp_no_metrics";
#else
constexpr const char* kBenchName = "cpp";
#endif

constexpr size_t kDistinctKeys = 1000000;
constexpr double kMinRoundSeconds = 0.3;
// High enough never to deny: every call takes the allowed path, as governor's cases do.
constexpr const char* kPolicy = "1000000000/minute";
constexpr const char* kTwoPolicies = "1000000000/minute; 1000000000/hour";  // 1e9: the largest limit a policy takes
constexpr const char* kHotKey = "user:42";

// The same keys as governor's case: "user:" + (i * 7919 % 10000019).
const std::vector<std::string>& distinct_keys() {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> k;
    k.reserve(kDistinctKeys);
    for (size_t i = 0; i < kDistinctKeys; ++i) k.push_back("user:" + std::to_string(i * 7919 % 10000019));
    return k;
  }();
  return keys;
}

// The baseline: what a hand-written single-threaded fixed window costs (clock read, hash lookup, compare, add).
struct BareWindow {
  int64_t count = 0;
  int64_t start_us = 0;
};
using BareMap = std::unordered_map<std::string, BareWindow>;

bool bare_check(BareMap& map, const std::string& key, int64_t limit, int64_t period_us) {
  const int64_t now = ratewarden::monotonic_now_us();
  BareWindow& w = map[key];
  if (now >= w.start_us + period_us) w = BareWindow{0, now};
  if (w.count >= limit) return false;
  ++w.count;
  return true;
}

// A limiter that already holds every distinct key: the cases measure the steady state, not the first insertions
// (governor's case is warmed the same way). Built once, on first use, even when several threads ask at once.
struct WarmLimiter {
  explicit WarmLimiter(const char* url) : limiter(kPolicy, ratewarden::open_store(url)) {
    for (const std::string& key : distinct_keys()) limiter.hit(key);
  }
  ratewarden::Limiter limiter;
  size_t next = 0;  // where the single-threaded cycle goes on: an LRU bound sees one endless cycle, not restarts
};

WarmLimiter& no_eviction() {
  static WarmLimiter warm("memory://?max_keys=2000000");
  return warm;
}

WarmLimiter& default_bound() {
  static WarmLimiter warm("memory://");  // the default max_keys (reported with the figures)
  return warm;
}

void report_store(benchmark::State& state, const ratewarden::Limiter& limiter) {
  const ratewarden::StoreStats s = limiter.store()->stats();
  state.counters["evictions"] = static_cast<double>(s.evictions);
  state.counters["keys"] = static_cast<double>(s.keys);
  state.counters["max_keys"] = static_cast<double>(s.max_keys);
}

void bare_hot_key(benchmark::State& state) {
  BareMap map;
  const std::string key = kHotKey;
  for (auto _ : state) benchmark::DoNotOptimize(bare_check(map, key, 1000000000, 60000000));
  state.SetItemsProcessed(state.iterations());
}

void bare_distinct_keys(benchmark::State& state) {
  static BareMap map = [] {
    BareMap m;
    for (const std::string& key : distinct_keys()) bare_check(m, key, 1000000000, 60000000);
    return m;
  }();
  static size_t next = 0;
  const auto& keys = distinct_keys();
  for (auto _ : state) {
    benchmark::DoNotOptimize(bare_check(map, keys[next], 1000000000, 60000000));
    if (++next == keys.size()) next = 0;
  }
  state.SetItemsProcessed(state.iterations());
}

void hot_key(benchmark::State& state, const char* policy) {
  ratewarden::Limiter limiter(policy, ratewarden::open_store("memory://"));
  const std::string key = kHotKey;
  for (auto _ : state) benchmark::DoNotOptimize(limiter.hit(key));
  state.SetItemsProcessed(state.iterations());
}

// Parts of a hit, for the table's information rows (issue 39): the keyed hash of the key (SipHash-1-3 with the
// store's random key: clients cannot aim keys at one shard or probe chain; governor hashes with SipHash-1-3 too,
// unkeyed for the shard), the shard's lock, taken and released (one atomic instruction each; governor's check takes
// three), and the clock read (the CPU's time-stamp counter, as governor's clock reads it): what they cost differs
// from one CPU, and one hypervisor, to the next.
void keyed_hash(benchmark::State& state) {
  const ratewarden::util::SipKey sip = ratewarden::util::random_sip_key();
  std::string key = kHotKey;
  for (auto _ : state) {
    benchmark::DoNotOptimize(key.data());  // the key "changes": the hash is computed every time
    benchmark::DoNotOptimize(ratewarden::util::siphash13(sip, key));
  }
  state.SetItemsProcessed(state.iterations());
}

void shard_lock(benchmark::State& state) {
  ratewarden::util::Lock mu;
  for (auto _ : state) {
    mu.lock();
    benchmark::ClobberMemory();
    mu.unlock();
  }
  state.SetItemsProcessed(state.iterations());
}

void clock_read(benchmark::State& state) {
  ratewarden::util::FastClock clock;
  for (auto _ : state) benchmark::DoNotOptimize(clock.now_us());
  state.SetItemsProcessed(state.iterations());
}

void distinct_keys_cycled(benchmark::State& state, WarmLimiter& (*warm_limiter)()) {
  WarmLimiter& warm = warm_limiter();
  const auto& keys = distinct_keys();
  for (auto _ : state) {
    benchmark::DoNotOptimize(warm.limiter.hit(keys[warm.next]));
    if (++warm.next == keys.size()) warm.next = 0;
  }
  state.SetItemsProcessed(state.iterations());
  report_store(state, warm.limiter);
}

// Each thread cycles its own slice of the keys (no two threads share a key), in the store that holds them all.
void distinct_keys_threads(benchmark::State& state) {
  ratewarden::Limiter& limiter = no_eviction().limiter;
  const auto& keys = distinct_keys();
  const size_t slice = keys.size() / static_cast<size_t>(state.threads());
  const size_t begin = slice * static_cast<size_t>(state.thread_index());
  size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(limiter.hit(keys[begin + i]));
    if (++i == slice) i = 0;
  }
  state.SetItemsProcessed(state.iterations());
}

// Keeps every run's throughput and counters (the console report still goes out, to stderr).
class Collector : public benchmark::ConsoleReporter {
 public:
  struct Result {
    std::vector<double> per_s;
    std::map<std::string, double> counters;  // the last run's
  };

  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs) {
      if (r.run_type != Run::RT_Iteration) continue;
      auto rate = r.counters.find("items_per_second");
      if (rate == r.counters.end()) continue;
      std::string name = r.run_name.function_name;
      const bool threaded = name == "distinct_keys_threads";
      if (threaded) name += "_" + std::to_string(r.threads);
      Result& result = results_[name];
      result.per_s.push_back(rate->second.value);
      for (const auto& [counter, value] : r.counters) {
        if (counter != "items_per_second") result.counters[counter] = value.value;
      }
      // The CPU the threads got (their CPU time over the wall time): on a shared machine, 2 threads may not get
      // 2 cores, and then their throughput says nothing about the store.
      if (threaded) result.counters["cores"] = r.cpu_accumulated_time / r.real_accumulated_time;
    }
  }

  void print_lines() const {
    for (const auto& [name, result] : results_) {
      std::vector<double> v = result.per_s;
      std::sort(v.begin(), v.end());
      const size_t m = v.size() / 2;
      const double per_s = v.size() % 2 == 1 ? v[m] : (v[m - 1] + v[m]) / 2;
      std::printf("{\"bench\":\"%s\",\"case\":\"%s\",\"ns\":%.2f,\"per_s\":%.0f,\"rounds\":%zu", kBenchName,
                  name.c_str(), 1e9 / per_s, per_s, v.size());
      for (const auto& [counter, value] : result.counters) {
        std::printf(value == static_cast<double>(static_cast<int64_t>(value)) ? ",\"%s\":%.0f" : ",\"%s\":%.3f",
                    counter.c_str(), value);
      }
      std::printf("}\n");
    }
  }

 private:
  std::map<std::string, Result> results_;
};

// Takes "--rounds=N" out of argv (Google Benchmark rejects flags it does not know).
int take_rounds(int* argc, char** argv) {
  int rounds = 5;
  int out = 1;
  for (int i = 1; i < *argc; ++i) {
    if (std::strncmp(argv[i], "--rounds=", 9) == 0) {
      rounds = std::atoi(argv[i] + 9);
    } else {
      argv[out++] = argv[i];
    }
  }
  *argc = out;
  return rounds;
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = take_rounds(&argc, argv);
  if (rounds < 1) {
    std::fprintf(stderr, "--rounds must be at least 1\n");
    return 2;
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;

  auto add = [rounds](benchmark::internal::Benchmark* b) { b->MinTime(kMinRoundSeconds)->Repetitions(rounds); };
  add(benchmark::RegisterBenchmark("bare_hot_key", bare_hot_key));
  add(benchmark::RegisterBenchmark("bare_distinct_keys", bare_distinct_keys));
  add(benchmark::RegisterBenchmark("hot_key", hot_key, kPolicy));
  add(benchmark::RegisterBenchmark("two_policies_hot_key", hot_key, kTwoPolicies));
  add(benchmark::RegisterBenchmark("keyed_hash", keyed_hash));
  add(benchmark::RegisterBenchmark("shard_lock", shard_lock));
  add(benchmark::RegisterBenchmark("clock_read", clock_read));
  add(benchmark::RegisterBenchmark("distinct_keys_no_eviction", distinct_keys_cycled, &no_eviction));
  add(benchmark::RegisterBenchmark("distinct_keys_default_bound", distinct_keys_cycled, &default_bound));
  add(benchmark::RegisterBenchmark("distinct_keys_threads", distinct_keys_threads)->Threads(1)->Threads(2)->UseRealTime());

  Collector collector;
  collector.SetOutputStream(&std::cerr);
  collector.SetErrorStream(&std::cerr);
  benchmark::RunSpecifiedBenchmarks(&collector);
  collector.print_lines();
  benchmark::Shutdown();
  return 0;
}
