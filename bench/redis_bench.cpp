// Redis store throughput with 1, 16, 64 and 1,024 calls in flight, against redis-benchmark replaying the same EVALSHA
// with the same concurrency AND the same pipelining, in the same run: our calls are kept in flight asynchronously on
// `pool` connections (min(N, 4)), redis-benchmark runs `-c pool -P N/pool`. Also: a single synchronous caller against
// a raw blocking hiredis round trip. Starts its own redis-server (tests/servers/launch.py) unless REDIS_URL is set.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <hiredis/hiredis.h>

#include "ratewarden/ratewarden.hpp"
#include "redis/scripts.hpp"
#include "bench_redis.hpp"

namespace {

using Clock = std::chrono::steady_clock;
constexpr double kSeconds = 2.0;
constexpr int kRounds = 5;
constexpr int kKeys = 100000;
const char* kPolicy = "1000000000/hour";  // everything is allowed: every call writes

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Decisions per second with `threads` callers, each hitting random keys for kSeconds.
double ratewarden_rate(ratewarden::Limiter& limiter, int threads) {
  std::atomic<bool> stop{false};
  std::atomic<int64_t> total{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      uint64_t x = 88172645463325252ull + static_cast<uint64_t>(t);
      int64_t n = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        limiter.hit("bench" + std::to_string(x % kKeys));
        ++n;
      }
      total += n;
    });
  }
  auto t0 = Clock::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(kSeconds));
  stop = true;
  for (auto& w : workers) w.join();
  return static_cast<double>(total) / std::chrono::duration<double>(Clock::now() - t0).count();
}

// Decisions per second with `in_flight` asynchronous calls kept in flight: each completion (on the I/O thread)
// starts the next call, as an event loop with that many requests at a time would.
double ratewarden_async_rate(ratewarden::Limiter& limiter, int in_flight) {
  std::atomic<bool> stop{false};
  std::atomic<int64_t> done{0};
  std::atomic<int> live{in_flight};
  std::function<void()> issue = [&] {
    thread_local uint64_t x = 88172645463325252ull ^ reinterpret_cast<uintptr_t>(&x);
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    limiter.hit_async("bench" + std::to_string(x % kKeys), 1,
                      [&](const ratewarden::Decision*, const ratewarden::Error*) {
                        done.fetch_add(1, std::memory_order_relaxed);
                        if (!stop.load(std::memory_order_relaxed))
                          issue();
                        else
                          live.fetch_sub(1);
                      },
                      ratewarden::Completion::any_thread);
  };
  auto t0 = Clock::now();
  for (int i = 0; i < in_flight; ++i) issue();
  std::this_thread::sleep_for(std::chrono::duration<double>(kSeconds));
  const int64_t counted = done.load();
  const double elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
  stop = true;
  while (live.load() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return static_cast<double>(counted) / elapsed;
}

// redis-benchmark with the same EVALSHA call (same script, same argument shape, random keys): `clients` connections
// with `pipeline` requests in flight on each.
double redis_benchmark_rate(const std::string& host, int port, int clients, int pipeline,
                            const ratewarden::Limiter& limiter) {
  const auto& p = limiter.policies()[0];
  const std::string key = limiter.storage_key("bench__rand_int__", 0);
  const int64_t requests = clients * pipeline == 1 ? 30000 : 200000;
  std::string cmd = "redis-benchmark -h " + host + " -p " + std::to_string(port) + " -c " + std::to_string(clients) +
                    " -P " + std::to_string(pipeline) + " -n " + std::to_string(requests) + " -r " +
                    std::to_string(kKeys) + " --csv EVALSHA " + ratewarden::lua_script(p.algorithm).sha + " 1 '" +
                    key + "' 1 1 '' " + std::to_string(p.limit) + " " + std::to_string(p.period_us) +
                    " 0 2>/dev/null";
  FILE* f = ::popen(cmd.c_str(), "r");
  if (f == nullptr) return 0;
  char line[512];
  double rps = 0;
  while (std::fgets(line, sizeof line, f) != nullptr) {
    // "EVALSHA ...","12345.67",...
    std::string s(line);
    size_t comma = s.find("\",\"");
    if (s.rfind("\"EVALSHA", 0) == 0 && comma != std::string::npos) rps = std::atof(s.c_str() + comma + 3);
  }
  ::pclose(f);
  return rps;
}

// One caller sending the same EVALSHA with plain blocking hiredis: the raw round trip, no library around it.
double raw_round_trip_us(const std::string& host, int port, const ratewarden::Limiter& limiter) {
  redisContext* c = redisConnect(host.c_str(), port);
  if (c == nullptr || c->err) return 0;
  const auto& p = limiter.policies()[0];
  const std::string sha = ratewarden::lua_script(p.algorithm).sha, limit = std::to_string(p.limit),
                    period = std::to_string(p.period_us);
  int64_t n = 0;
  auto t0 = Clock::now();
  std::string key;
  while (Clock::now() - t0 < std::chrono::duration<double>(kSeconds)) {
    key = limiter.storage_key("bench" + std::to_string(n % kKeys), 0);
    const char* argv[] = {"EVALSHA", sha.c_str(), "1", key.c_str(), "1", "1", "", limit.c_str(), period.c_str(), "0"};
    freeReplyObject(redisCommandArgv(c, 10, argv, nullptr));
    ++n;
  }
  const double us = 1e6 * std::chrono::duration<double>(Clock::now() - t0).count() / static_cast<double>(n);
  redisFree(c);
  return us;
}

}  // namespace

int main() {
  const BenchRedis redis;
  const std::string& host = redis.host;
  const int port = redis.port;

  const std::string url = "redis://" + host + ":" + std::to_string(port);
  ratewarden::Limiter warmup(kPolicy, ratewarden::open_store(url));
  warmup.hit("warmup");  // loads the script (NOSCRIPT -> EVAL), so redis-benchmark's EVALSHA finds it

  std::printf("%-10s %-22s %14s %14s %8s %8s\n", "in flight", "redis-benchmark", "ratewarden/s", "redis-bench/s",
              "ratio", "target");
  // Medians of interleaved rounds: the machine is shared by the server, the callers and redis-benchmark.
  for (int n : {1, 16, 64, 1024}) {
    const int pool = std::min(n, 4), pipeline = n / pool;
    ratewarden::Limiter limiter(kPolicy, ratewarden::open_store(url + "?timeout=10s&pool=" + std::to_string(pool)));
    std::vector<double> ours, raw;
    for (int round = 0; round < kRounds; ++round) {
      ours.push_back(ratewarden_async_rate(limiter, n));
      raw.push_back(redis_benchmark_rate(host, port, pool, pipeline, limiter));
    }
    const double o = median(ours), r = median(raw);
    const std::string shape = "-c " + std::to_string(pool) + " -P " + std::to_string(pipeline);
    std::printf("%-10d %-22s %14.0f %14.0f %8.2f %8s\n", n, shape.c_str(), o, r, r > 0 ? o / r : 0.0, ">= 0.9");
  }
  std::vector<double> ours, raw;
  for (int round = 0; round < kRounds; ++round) {
    ours.push_back(1e6 / ratewarden_rate(warmup, 1));
    raw.push_back(raw_round_trip_us(host, port, warmup));
  }
  std::printf("\nsingle synchronous caller: Limiter::hit %.1f us, raw hiredis EVALSHA round trip %.1f us: %.2fx "
              "(target <= 1.3)\n", median(ours), median(raw), median(ours) / median(raw));
  std::printf("\nratio = ratewarden decisions/s over redis-benchmark EVALSHA/s of the same script, with the same calls"
              " in flight\non the same number of connections (target >= 0.9, issue 11)\n");
  return 0;
}
