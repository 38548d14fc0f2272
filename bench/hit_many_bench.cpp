// hit_many throughput: batches of 100 random keys, from 1 and 8 callers, against each store URL given, in one run.
// Usage: hit_many_bench URL [URL...]   (bench/cluster_bench.sh starts a single node and a 3-master cluster)
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "ratewarden/ratewarden.hpp"

namespace {

constexpr int kBatch = 100;
constexpr int kKeys = 100000;
constexpr double kSeconds = 3.0;

double decisions_per_second(ratewarden::Limiter& limiter, int callers) {
  std::atomic<bool> stop{false};
  std::atomic<int64_t> total{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < callers; ++t) {
    threads.emplace_back([&, t] {
      std::vector<std::string> keys(kBatch);
      std::vector<std::string_view> views(kBatch);
      uint64_t x = 0x9E3779B97F4A7C15ull * static_cast<uint64_t>(t + 1);
      int64_t n = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        for (int i = 0; i < kBatch; ++i) {
          x ^= x << 13, x ^= x >> 7, x ^= x << 17;
          keys[i] = "user" + std::to_string(x % kKeys);
          views[i] = keys[i];
        }
        n += static_cast<int64_t>(limiter.hit_many(views).size());
      }
      total += n;
    });
  }
  const auto t0 = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(kSeconds));
  stop = true;
  for (auto& th : threads) th.join();
  return static_cast<double>(total) / std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s URL [URL...]\n", argv[0]);
    return 2;
  }
  std::vector<std::vector<double>> rates(static_cast<size_t>(argc - 1));
  std::printf("%-64s %8s %16s\n", "store", "callers", "decisions/s");
  for (int callers : {1, 8}) {
    for (int u = 1; u < argc; ++u) {
      ratewarden::Limiter limiter("1000000000/hour", ratewarden::open_store(argv[u]));
      limiter.hit("warmup");
      const double rate = decisions_per_second(limiter, callers);
      rates[static_cast<size_t>(u - 1)].push_back(rate);
      std::printf("%-64s %8d %16.0f\n", argv[u], callers, rate);
    }
  }
  for (int u = 2; u < argc; ++u)
    std::printf("\n%s vs %s: %.2fx (1 caller), %.2fx (8 callers)\n", argv[u], argv[1], rates[u - 1][0] / rates[0][0],
                rates[u - 1][1] / rates[0][1]);
  return 0;
}
