// N hits on the memory store, on a clock of its own, nothing else: run under callgrind by bench/in_process.sh with two values of N, the
// difference divided by the difference of N is the instructions of one hit (start-up and teardown cancel out).
// Instructions, unlike time, do not move with the machine's load: the decision counters' cost (issue 36, <= 2%)
// is this program built with them against it built without (RATEWARDEN_METRICS=OFF).
// bench/hit_instructions.sh holds the hot key's count under a ceiling in CI.
//   hit_instructions N [distinct|two|bare]    distinct: N different keys, under max_keys, instead of one hot key;
//                                             two: one hot key under two policies ("per hour; per day");
//                                             bare: the hand-written window of bench/memory_store_bench.cpp instead
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unordered_map>

#include "ratewarden/clock.hpp"
#include "ratewarden/limiter.hpp"
#include "ratewarden/store.hpp"

namespace {

// memory_store_bench.cpp's baseline, on the real clock as there: what a user would write by hand.
struct BareWindow {
  int64_t count = 0;
  int64_t start_us = 0;
};

__attribute__((noinline)) bool bare_check(std::unordered_map<std::string, BareWindow>& map, const std::string& key) {
  const int64_t now = ratewarden::monotonic_now_us();
  BareWindow& w = map[key];
  if (now >= w.start_us + 60000000) w = BareWindow{0, now};
  if (w.count >= 1000000000) return false;
  ++w.count;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: hit_instructions N [distinct|two|bare]\n");
    return 2;
  }
  const long n = std::atol(argv[1]);
  const bool distinct = argc > 2 && std::strcmp(argv[2], "distinct") == 0;
  const bool two = argc > 2 && std::strcmp(argv[2], "two") == 0;
  if (argc > 2 && std::strcmp(argv[2], "bare") == 0) {
    std::unordered_map<std::string, BareWindow> map;
    const std::string key = "user:42";
    long allowed = 0;
    for (long i = 0; i < n; ++i) allowed += bare_check(map, key) ? 1 : 0;
    return allowed == n ? 0 : 1;
  }
  // A clock that moves 1 µs a call: the real one would make the count depend on how fast the program ran (what
  // expires, when a sweep runs), and callgrind runs it ~50x slower.
  auto store = ratewarden::open_store("memory://?max_keys=2000000", [t = int64_t{1} << 40]() mutable { return ++t; });
  ratewarden::Limiter limiter(two ? "1000000000/hour; 1000000000/day" : "1000000000/hour", store);
  std::string key = "user:00000000";
  long allowed = 0;
  for (long i = 0; i < n; ++i) {
    if (distinct) {  // "user:" and i in 8 digits: the same length for every i, so no allocation differs
      long v = i;
      for (size_t d = key.size(); d-- > 5; v /= 10) key[d] = static_cast<char>('0' + v % 10);
    }
    allowed += limiter.hit(key).allowed ? 1 : 0;
  }
  return allowed == n ? 0 : 1;
}
