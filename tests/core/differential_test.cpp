// Differential fuzzing: seeded random traffic through the memory store and a shared store (Redis, PostgreSQL) side
// by side, on one manual clock, for every algorithm. The C++ functions and their Lua and SQL twins must decide
// identically, step by step, policy_index included. Each algorithm runs fixed seeds plus one random seed; a failure names its seed, and
// RATEWARDEN_FUZZ_SEED=<seed> replays it in place of the random one.
#include <algorithm>
#include <cstdlib>
#include <map>
#include <ostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "redis_server.hpp"
#include "test_support.hpp"

namespace ratewarden::testing {
namespace {

constexpr int kSteps = 4000;
constexpr int kPostgresSteps = 2000;  // a round trip through PL/pgSQL costs ~4x Redis's: CI stays lean
constexpr int kKeys = 4;
constexpr uint64_t kFixedSeeds[] = {1, 2, 3};
constexpr uint64_t kRandomSeed = 0;  // the parameter that stands for this run's random seed

// Rates from a few milliseconds to a day, so that time jumps cross windows of every size.
const char* const kRates[] = {"3/s", "5/500ms", "10/10s", "20/minute", "7/minute", "100/hour", "4/2s", "50/day"};
constexpr int32_t kBuckets[] = {1, 3, 7, 64};

RedisServer& server() {
  static RedisServer s;
  return s;
}

PostgresServer& postgres() { return shared_postgres_server(); }

// The shared store a fuzz case compares with the memory store.
enum class Shared { redis, postgres };

uint64_t random_seed() {
  if (const char* env = std::getenv("RATEWARDEN_FUZZ_SEED")) return std::strtoull(env, nullptr, 10);
  return std::random_device{}() | 1;  // never 0
}

// One limiter, built alike on both stores.
struct Pair {
  std::string description;
  Limiter memory;
  Limiter redis;
  std::map<std::string, std::pair<Decision, int64_t>> reservations = {};  // the last per key, and its cost
};

class Fuzz {
 public:
  Fuzz(Algorithm algorithm, uint64_t seed, Shared shared)
      : algorithm_(algorithm), rng_(seed), steps_(shared == Shared::postgres ? kPostgresSteps : kSteps) {
    // Not aligned to any bucket: sliding_window buckets start anywhere relative to the first hit.
    start_ = 1702080000000000 + uniform(0, 86400000000);
    clock_.set(start_);
    // Both stores start empty: Redis is flushed; PostgreSQL keeps its rows, so each case takes a prefix of its own.
    static int cases = 0;
    prefix_ = "fuzz" + std::to_string(++cases);
    std::shared_ptr<Store> redis;
    if (shared == Shared::redis) {
      server().command({"FLUSHALL"});
      redis = open_store(server().url() + "?timeout=10s", clock_.clock());  // a loaded machine meets it
    } else {
      redis = open_store(postgres().url("?timeout=5s"), clock_.clock());
    }
    auto memory = open_store("memory://", clock_.clock());
    add(rate(), {}, memory, redis);
    add(rate(), random_option(), memory, redis);
    // Two or three distinct rates on one key.
    std::vector<size_t> picks(std::size(kRates));
    for (size_t i = 0; i < picks.size(); ++i) picks[i] = i;
    std::shuffle(picks.begin(), picks.end(), rng_);
    std::string multi = kRates[picks[0]] + std::string("; ") + kRates[picks[1]];
    if (coin(0.5)) multi += std::string("; ") + kRates[picks[2]];
    add(multi, {}, memory, redis);
  }

  void run() {
    for (int step = 0; step < steps_; ++step) {
      advance_time();
      Pair& pair = pairs_[static_cast<size_t>(uniform(0, static_cast<int64_t>(pairs_.size()) - 1))];
      const std::string key = "k" + std::to_string(uniform(0, kKeys - 1));
      const int64_t cost = coin(0.75) ? 1 : uniform(1, pair.memory.max_cost());
      const double op = std::uniform_real_distribution<double>(0, 1)(rng_);
      std::ostringstream what;
      what << "step " << step << " at +" << clock_.now() - start_ << " µs on " << pair.description << ": ";
      if (op < 0.04) {
        SCOPED_TRACE(what.str() + "reset " + key);
        pair.memory.reset(key);
        pair.redis.reset(key);
      } else if (op < 0.08) {
        SCOPED_TRACE(what.str() + "hit_many k0..k2, cost " + std::to_string(cost));
        const std::vector<std::string_view> keys = {"k0", "k1", "k2"};
        ASSERT_EQ(pair.memory.hit_many(keys, cost), pair.redis.hit_many(keys, cost));
      } else if (op < 0.13) {
        SCOPED_TRACE(what.str() + "refund " + key + ", cost " + std::to_string(cost));
        ASSERT_EQ(pair.memory.refund(key, cost), pair.redis.refund(key, cost));
      } else if (op < 0.25) {
        SCOPED_TRACE(what.str() + "peek " + key + ", cost " + std::to_string(cost));
        ASSERT_EQ(pair.memory.peek(key, cost), pair.redis.peek(key, cost));
      } else if (op < 0.45 && takes_reservations()) {
        // Reservations (gcra, token_bucket): a wait of up to two periods; then and again, a cancel of the key's
        // last one (given back only while nothing was charged after it).
        const int64_t max_wait = coin(0.2) ? 0 : uniform(0, 2 * pair.memory.policies()[0].period_us);
        auto& last = pair.reservations[key];
        if (op < 0.38 || last.second == 0) {
          SCOPED_TRACE(what.str() + "reserve " + key + ", cost " + std::to_string(cost) + ", max_wait " +
                       std::to_string(max_wait));
          const Decision d = pair.memory.reserve(key, cost, max_wait);
          ASSERT_EQ(d, pair.redis.reserve(key, cost, max_wait));
          if (d.allowed) last = {d, cost};
        } else {
          SCOPED_TRACE(what.str() + "cancel " + key + ", cost " + std::to_string(last.second));
          ASSERT_EQ(pair.memory.cancel(key, last.second, last.first), pair.redis.cancel(key, last.second, last.first));
        }
      } else {
        SCOPED_TRACE(what.str() + "hit " + key + ", cost " + std::to_string(cost));
        ASSERT_EQ(pair.memory.hit(key, cost), pair.redis.hit(key, cost));
      }
    }
  }

 private:
  bool takes_reservations() const { return algorithm_ == Algorithm::gcra || algorithm_ == Algorithm::token_bucket; }
  int64_t uniform(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng_); }
  bool coin(double p) { return std::bernoulli_distribution(p)(rng_); }
  template <class T, size_t N>
  const T& pick(const T (&items)[N]) {
    return items[static_cast<size_t>(uniform(0, static_cast<int64_t>(N) - 1))];
  }
  std::string rate() { return pick(kRates); }

  LimiterOptions random_option() {
    LimiterOptions o;
    switch (algorithm_info(algorithm_).option) {
      case AlgorithmOption::none: break;
      case AlgorithmOption::burst: o.burst = uniform(1, 30); break;
      case AlgorithmOption::buckets: o.buckets = pick(kBuckets); break;
    }
    return o;
  }

  void add(const std::string& policy, LimiterOptions options, const std::shared_ptr<Store>& memory,
           const std::shared_ptr<Store>& redis) {
    options.algorithm = algorithm_;
    options.prefix = prefix_;
    std::string description = "\"" + policy + "\"";
    if (options.burst) description += " burst " + std::to_string(*options.burst);
    if (options.buckets) description += " buckets " + std::to_string(*options.buckets);
    pairs_.push_back(Pair{description, Limiter(policy, memory, options), Limiter(policy, redis, options)});
  }

  // Mostly small steps, some across windows, a few of hours or days. The test clock runs far ahead of real time, so
  // the keys' real TTLs (set from the test clock, plus a grace second) never drop a state the test clock still
  // sees alive.
  void advance_time() {
    const double r = std::uniform_real_distribution<double>(0, 1)(rng_);
    if (r < 0.5) return;
    if (r < 0.8) clock_.advance(uniform(1, 20000));
    else if (r < 0.92) clock_.advance(uniform(20000, 2000000));
    else if (r < 0.98) clock_.advance(uniform(2000000, 600000000));
    else clock_.advance(uniform(600000000, 3 * 86400000000LL));
  }

  Algorithm algorithm_;
  std::mt19937_64 rng_;
  int steps_;
  int64_t start_ = 0;
  ManualClock clock_;  // shared by both stores
  std::string prefix_;
  std::vector<Pair> pairs_;
};

struct FuzzCase {
  Algorithm algorithm;
  uint64_t seed;  // kRandomSeed: a new one each run
  Shared shared;
};

std::string fuzz_case_name(const FuzzCase& c) {
  return std::string(c.shared == Shared::postgres ? "postgres_" : "") + std::string(algorithm_name(c.algorithm)) + "_seed_" +
         (c.seed == kRandomSeed ? std::string("random") : std::to_string(c.seed));
}

void PrintTo(const FuzzCase& c, std::ostream* os) { *os << fuzz_case_name(c); }

class Differential : public ::testing::TestWithParam<FuzzCase> {};

TEST_P(Differential, MemoryAndRedisDecideAlike) {
  const uint64_t seed = GetParam().seed == kRandomSeed ? random_seed() : GetParam().seed;
  SCOPED_TRACE("seed " + std::to_string(seed) + " (replay: RATEWARDEN_FUZZ_SEED=" + std::to_string(seed) + ")");
  Fuzz(GetParam().algorithm, seed, GetParam().shared).run();
}

std::vector<FuzzCase> fuzz_cases() {
  std::vector<FuzzCase> out;
  for (const AlgorithmInfo& a : kAlgorithms) {
    for (Shared shared : {Shared::redis, Shared::postgres}) {
      for (uint64_t seed : kFixedSeeds) out.push_back({a.algorithm, seed, shared});
      out.push_back({a.algorithm, kRandomSeed, shared});
    }
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(EveryAlgorithm, Differential, ::testing::ValuesIn(fuzz_cases()),
                         [](const ::testing::TestParamInfo<FuzzCase>& info) { return fuzz_case_name(info.param); });

}  // namespace
}  // namespace ratewarden::testing
