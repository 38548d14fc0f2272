// Decisions per second of the PostgreSQL store with N synchronous callers (threads), each hitting random keys of
// KEYS (default 100,000) with POLICY (default one that allows everything: every call writes its row). Prints one
// number.
//   postgres_bench URL CALLERS SECONDS [POLICY [KEYS]]
// bench/postgres/run.py runs it beside pgbench and rate-limiter-flexible at the same concurrency.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "ratewarden/ratewarden.hpp"

int main(int argc, char** argv) {
  if (argc < 4 || argc > 6) {
    std::fprintf(stderr, "usage: postgres_bench URL CALLERS SECONDS [POLICY [KEYS]]\n");
    return 2;
  }
  const int callers = std::atoi(argv[2]);
  const double seconds = std::atof(argv[3]);
  const uint64_t keys = argc > 5 ? std::strtoull(argv[5], nullptr, 10) : 100000;
  ratewarden::Limiter limiter(argc > 4 ? argv[4] : "1000000000/hour", ratewarden::open_store(argv[1]));
  limiter.hit("warm-up");  // connected, schema made, statements prepared
  std::atomic<bool> stop{false};
  std::atomic<int64_t> total{0}, errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < callers; ++t) {
    threads.emplace_back([&, t] {
      uint64_t x = 88172645463325252ull + static_cast<uint64_t>(t) * 7919;
      int64_t done = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        try {
          limiter.hit("user" + std::to_string(x % keys));
          ++done;
        } catch (const ratewarden::StoreError&) {
          errors++;
        }
      }
      total += done;
    });
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  for (auto& t : threads) t.join();
  if (errors > 0) std::fprintf(stderr, "postgres_bench: %lld store errors\n", static_cast<long long>(errors.load()));
  std::printf("%.0f\n", static_cast<double>(total.load()) / seconds);
  return 0;
}
