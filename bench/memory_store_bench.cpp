// Memory store throughput against the cost floor of any in-memory limiter: a bare std::unordered_map fixed-window
// check (clock read, hash lookup, compare, increment), measured in the same binary. Prints a table with ratios.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "ratewarden/ratewarden.hpp"

namespace {

constexpr int64_t kDistinctKeys = 1000000;

const std::vector<std::string>& distinct_keys() {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> k;
    k.reserve(kDistinctKeys);
    for (int64_t i = 0; i < kDistinctKeys; ++i) k.push_back("user:" + std::to_string(i * 7919 % 10000019));
    return k;
  }();
  return keys;
}

// The baseline: what a hand-written single-threaded fixed window costs.
struct BareWindow {
  int64_t count = 0;
  int64_t start_us = 0;
};

bool bare_check(std::unordered_map<std::string, BareWindow>& map, const std::string& key, int64_t limit,
                int64_t period_us) {
  const int64_t now = ratewarden::monotonic_now_us();
  BareWindow& w = map[key];
  if (now >= w.start_us + period_us) w = BareWindow{0, now};
  if (w.count >= limit) return false;
  ++w.count;
  return true;
}

void BM_Baseline_HotKey(benchmark::State& state) {
  std::unordered_map<std::string, BareWindow> map;
  const std::string key = "user:42";
  for (auto _ : state) benchmark::DoNotOptimize(bare_check(map, key, 1000000000, 60000000));
  state.SetItemsProcessed(state.iterations());
}

void BM_Memory_HotKey(benchmark::State& state) {
  ratewarden::Limiter limiter("1000000000/minute", ratewarden::open_store("memory://"));
  const std::string key = "user:42";
  for (auto _ : state) benchmark::DoNotOptimize(limiter.hit(key));
  state.SetItemsProcessed(state.iterations());
}

void BM_Baseline_DistinctKeys(benchmark::State& state) {
  std::unordered_map<std::string, BareWindow> map;
  const auto& keys = distinct_keys();
  size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(bare_check(map, keys[i], 100, 60000000));
    if (++i == keys.size()) i = 0;
  }
  state.SetItemsProcessed(state.iterations());
}

ratewarden::Limiter& shared_limiter() {
  static ratewarden::Limiter limiter("100/minute", ratewarden::open_store("memory://?max_keys=1000000"));
  return limiter;
}

void BM_Memory_DistinctKeys(benchmark::State& state) {
  auto& limiter = shared_limiter();
  const auto& keys = distinct_keys();
  // Each thread walks its own part of the key space.
  size_t i = keys.size() / static_cast<size_t>(state.threads()) * static_cast<size_t>(state.thread_index());
  for (auto _ : state) {
    benchmark::DoNotOptimize(limiter.hit(keys[i]));
    if (++i == keys.size()) i = 0;
  }
  state.SetItemsProcessed(state.iterations());
}

// Medians of several repetitions: these machines are noisy.
BENCHMARK(BM_Baseline_HotKey)->Repetitions(7)->ReportAggregatesOnly(true);
BENCHMARK(BM_Memory_HotKey)->Repetitions(7)->ReportAggregatesOnly(true);
BENCHMARK(BM_Baseline_DistinctKeys)->Iterations(2000000)->Repetitions(3)->ReportAggregatesOnly(true);
BENCHMARK(BM_Memory_DistinctKeys)
    ->Iterations(2000000)
    ->Threads(1)
    ->Threads(2)
    ->UseRealTime()
    ->Repetitions(3)
    ->ReportAggregatesOnly(true);

// Keeps each run's throughput so the ratios can be printed after the usual report.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs) {
      auto it = r.counters.find("items_per_second");
      if (r.aggregate_name == "median" && it != r.counters.end()) rate_[r.run_name.function_name + "/" + std::to_string(r.threads)] = it->second.value;
    }
  }
  double rate(const std::string& name) const {
    auto it = rate_.find(name);
    return it == rate_.end() ? 0 : it->second;
  }

 private:
  std::map<std::string, double> rate_;
};

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);

  const double base_hot = reporter.rate("BM_Baseline_HotKey/1");
  const double mem_hot = reporter.rate("BM_Memory_HotKey/1");
  const double base_many = reporter.rate("BM_Baseline_DistinctKeys/1");
  const double one = reporter.rate("BM_Memory_DistinctKeys/1");
  const double two = reporter.rate("BM_Memory_DistinctKeys/2");
  auto ns = [](double per_s) { return per_s > 0 ? 1e9 / per_s : 0.0; };
  std::printf("\n%-44s %12s %14s\n", "memory store, medians (same run)", "ns/decision", "decisions/s");
  std::printf("%-44s %12.1f %14.0f\n", "baseline unordered_map check, hot key", ns(base_hot), base_hot);
  std::printf("%-44s %12.1f %14.0f\n", "Limiter::hit, hot key", ns(mem_hot), mem_hot);
  std::printf("%-44s %12.1f %14.0f\n", "baseline, 1M distinct keys", ns(base_many), base_many);
  std::printf("%-44s %12.1f %14.0f\n", "Limiter::hit, 1M distinct keys, 1 thread", ns(one), one);
  std::printf("%-44s %12.1f %14.0f\n", "Limiter::hit, 1M distinct keys, 2 threads", ns(two), two);
  std::printf("\nhot key: hit costs %.2fx the baseline (target <= 2.0)\n", ns(mem_hot) / ns(base_hot));
  std::printf("1M keys: hit costs %.2fx the baseline\n", ns(one) / ns(base_many));
  std::printf("1M keys: 2 threads give %.2fx one thread's throughput (target >= 1.6)\n", two / one);
  return 0;
}
