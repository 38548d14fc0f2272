// The hybrid modes (docs/hybrid.md) from C++, against the targets, in one run:
//  1. one abusive key flooding "10/minute": denials/s in local_first vs exact vs the memory store (1 and 4 threads);
//  2. async: allowed hits/s on a key with room vs the memory store;
//  3. async admission error: 4 processes, sync=50ms, "1000 per 10 seconds" (fixed window and gcra) offered at 4x
//     the limit, admitted per window against the limit.
// Usage: hybrid_bench REDIS_URL [rounds]   (bench/hybrid.sh starts a Redis and runs it)
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "ratewarden/ratewarden.hpp"

namespace {

using namespace ratewarden;
using SteadyClock = std::chrono::steady_clock;

constexpr double kSeconds = 0.5;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Calls/s of `call` on `threads` threads for kSeconds.
template <typename F>
double rate(int threads, F call) {
  std::atomic<bool> stop{false};
  std::atomic<int64_t> total{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t)
    workers.emplace_back([&] {
      int64_t n = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        for (int i = 0; i < 64; ++i) call();
        n += 64;
      }
      total += n;
    });
  const auto t0 = SteadyClock::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(kSeconds));
  stop = true;
  for (auto& w : workers) w.join();
  return static_cast<double>(total) / std::chrono::duration<double>(SteadyClock::now() - t0).count();
}

// A store whose local knowledge is in use (its reset log read once).
std::shared_ptr<Store> ready(const std::string& url) {
  auto store = open_store(url);
  Limiter("1/hour", store).peek("warm-up");
  while (store->stats().sync_lag_us < 0 && url.find("mode=") != std::string::npos)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return store;
}

std::string key(const char* name) { return std::string(name) + ":" + std::to_string(::getpid()) + ":" + std::to_string(SteadyClock::now().time_since_epoch().count()); }

void print_row(const char* what, double ours, const char* base_name, double base, const char* target, bool met) {
  std::printf("%-52s %12.0f/s %-14s %12.0f/s %8.2fx  %-10s %s\n", what, ours, base_name, base, ours / base, target,
              met ? "met" : "MISS");
}

void floods(const std::string& redis, int rounds) {
  const std::string memory = "memory://";
  std::printf("\n== one abusive key flooding 10/minute: denials/s (medians of %d interleaved rounds of %.1f s)\n", rounds,
              kSeconds);
  for (int threads : {1, 4}) {
    std::vector<double> mem, exact, local;
    for (int r = 0; r < rounds; ++r) {
      for (const std::string* url : {&memory, &redis}) {
        for (bool lf : {false, true}) {
          if (url == &memory && lf) continue;
          const std::string u = *url + (lf ? "?mode=local_first" : "");
          auto store = ready(u);
          Limiter limiter("10/minute", store);
          const std::string k = key("abuser");
          for (int i = 0; i < 11; ++i) limiter.hit(k);
          const double v = rate(threads, [&] {
            if (limiter.hit(k).allowed) std::abort();
          });
          (url == &memory ? mem : lf ? local : exact).push_back(v);
        }
      }
    }
    char label[96];
    std::snprintf(label, sizeof label, "C++ %d thread(s): local_first / memory", threads);
    print_row(label, median(local), "memory", median(mem), ">= 0.5x", median(local) >= 0.5 * median(mem));
    std::snprintf(label, sizeof label, "C++ %d thread(s): local_first / exact", threads);
    print_row(label, median(local), "exact", median(exact), ">= 20x", median(local) >= 20 * median(exact));
  }
}

void async_allows(const std::string& redis, int rounds) {
  std::printf("\n== async: allowed hits/s on a key with room (1000000000/hour)\n");
  std::vector<double> mem, async, exact;
  for (int r = 0; r < rounds; ++r) {
    for (int which = 0; which < 3; ++which) {
      const std::string u = which == 0 ? "memory://" : which == 1 ? redis + "?mode=async&sync=50ms" : redis;
      auto store = ready(u);
      Limiter limiter("1000000000/hour", store);
      const std::string k = key("room");
      // The first round trips, then the first top-up: measure once the lease is flowing.
      const auto t0 = SteadyClock::now();
      while (SteadyClock::now() - t0 < std::chrono::milliseconds(200)) limiter.hit(k);
      const double v = rate(1, [&] {
        if (!limiter.hit(k).allowed) std::abort();
      });
      (which == 0 ? mem : which == 1 ? async : exact).push_back(v);
    }
  }
  print_row("C++ 1 thread: async / memory", median(async), "memory", median(mem), ">= 0.5x",
            median(async) >= 0.5 * median(mem));
  print_row("C++ 1 thread: async / exact", median(async), "exact", median(exact), "info", true);
}

// Children admitted per window of the key, from `processes` processes offering `offered` hits per second in all.
void admission(const std::string& redis, Algorithm algorithm, int processes, int windows) {
  const int64_t limit = 1000;
  const int64_t window_us = 10000000;
  const double offered = 4.0 * limit / 10.0;  // 4x the limit
  const std::string k = key("admission");
  std::vector<int> pipes;
  std::vector<pid_t> pids;
  const auto start = SteadyClock::now() + std::chrono::milliseconds(500);
  for (int p = 0; p < processes; ++p) {
    int fds[2];
    if (::pipe(fds) != 0) return;
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::close(fds[0]);
      std::vector<int64_t> per_window(static_cast<size_t>(windows), 0);
      LimiterOptions o;
      o.algorithm = algorithm;
      o.on_store_error = OnStoreError::deny;
      Limiter limiter("1000 per 10 seconds", ready(redis + "?mode=async&sync=50ms"), o);
      const double interval_us = 1e6 * processes / offered;
      for (int64_t i = 0;; ++i) {
        const auto at = start + std::chrono::microseconds(static_cast<int64_t>(i * interval_us + p * interval_us / processes));
        const int64_t w = std::chrono::duration_cast<std::chrono::microseconds>(at - start).count() / window_us;
        if (w >= windows) break;
        std::this_thread::sleep_until(at);
        if (limiter.hit(k).allowed) ++per_window[static_cast<size_t>(w)];
      }
      const ssize_t n = static_cast<ssize_t>(per_window.size() * sizeof(int64_t));
      ::_exit(::write(fds[1], per_window.data(), static_cast<size_t>(n)) == n ? 0 : 1);
    }
    ::close(fds[1]);
    pipes.push_back(fds[0]);
    pids.push_back(pid);
  }
  std::vector<int64_t> total(static_cast<size_t>(windows), 0);
  for (size_t p = 0; p < pipes.size(); ++p) {
    std::vector<int64_t> got(static_cast<size_t>(windows), 0);
    const ssize_t n = ::read(pipes[p], got.data(), got.size() * sizeof(int64_t));
    ::close(pipes[p]);
    ::waitpid(pids[p], nullptr, 0);
    if (n != static_cast<ssize_t>(got.size() * sizeof(int64_t))) std::printf("a child failed\n");
    for (size_t w = 0; w < got.size(); ++w) total[w] += got[w];
  }
  // gcra: the first window also holds the burst (1000 at once, then 100/s): its exact admission is burst + rate x T.
  for (int w = 0; w < windows; ++w) {
    const int64_t exact = algorithm == Algorithm::gcra && w == 0 ? 2 * limit : limit;
    const double error = 100.0 * static_cast<double>(total[static_cast<size_t>(w)] - exact) / static_cast<double>(limit);
    std::printf("%-14s window %d: admitted %5lld, exact %5lld, error %+6.2f%% of the limit  (target within +-5%%) %s\n",
                std::string(algorithm_name(algorithm)).c_str(), w, static_cast<long long>(total[static_cast<size_t>(w)]),
                static_cast<long long>(exact), error, std::abs(error) <= 5.0 ? "met" : "MISS");
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s REDIS_URL [rounds]\n", argv[0]);
    return 2;
  }
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  const std::string redis = argv[1];
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 5;
  floods(redis, rounds);
  async_allows(redis, rounds);
  std::printf("\n== async admission: 4 processes, sync=50ms, \"1000 per 10 seconds\" offered at 4x, 2 windows each\n");
  std::printf("   (fixed_window windows are the key's own, from its first hit; gcra's the same 10 s spans)\n");
  admission(redis, Algorithm::gcra, 4, 2);
  admission(redis, Algorithm::fixed_window, 4, 2);
  return 0;
}
