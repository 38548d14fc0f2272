// What each algorithm's Redis script costs the server, against the minimal script for the same job, measured on
// the same redis-server in the same run (INFO commandstats: usec of EVALSHA over its calls, after CONFIG RESETSTAT),
// as medians of interleaved rounds. Also the sliding log's cost at limits 10, 1,000 and 100,000 on one hot key, in
// Redis and in the memory store. Starts its own redis-server (tests/servers/launch.py) unless REDIS_URL is set.
//   build-dir/bench/script_cost            (BENCH_ROUNDS=5 BENCH_CALLS=20000 BENCH_KEYS=100000 by default)
// BENCH_KEYS=1000 measures live keys: after the first round every call finds its key's state (no call opens one).
// Prints one table; each ratio beside its target (docs/redis-cost.md).

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
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

using ratewarden::Algorithm;
using ratewarden::Limiter;
using ratewarden::LimiterOptions;

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::atoi(v) : fallback;
}
const int kRounds = env_int("BENCH_ROUNDS", 7);
const int kCalls = env_int("BENCH_CALLS", 20000);
const bool kSkipLog = env_int("BENCH_SKIP_LOG", 0) != 0;  // only the per-algorithm rows
constexpr int kDepth = 32;  // pipelined calls in flight on the one connection
const int kKeys = env_int("BENCH_KEYS", 100000);

// The minimal scripts for the same jobs: a fixed window as INCRBY + PEXPIRE on the first hit; GCRA as TIME + GET +
// SET PX (ARGV: cost, then the emission interval and the tolerance in µs).
const char* kMinimalFixedWindow =
    "local c = redis.call('INCRBY', KEYS[1], ARGV[1])\n"
    "if c == tonumber(ARGV[1]) then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end\n"
    "return c\n";
const char* kMinimalGcra =
    "local t = redis.call('TIME')\n"
    "local now = t[1] * 1000000 + t[2]\n"
    "local tat = tonumber(redis.call('GET', KEYS[1])) or now\n"
    "if tat < now then tat = now end\n"
    "local new = tat + ARGV[1] * ARGV[2]\n"
    "if new - now > tonumber(ARGV[3]) then return 0 end\n"
    "redis.call('SET', KEYS[1], string.format('%d', new), 'PX', math.ceil((new - now) / 1000))\n"
    "return 1\n";

// Floors: the Redis calls a read-first script cannot avoid, with no logic around them, called with the library's
// argument shape (cost, mode, now, then limit, period and option: kOurArgs). A fixed window that writes nothing on a
// denial and reports its reset reads the count and the TTL before it counts; a sliding window reads the clock and its
// state, then rewrites the state's head (SETRANGE) or, opening it, sets the state with its TTL.
const char* kFloorFixedWindow =
    "local c = tonumber(redis.call('GET', KEYS[1])) or 0\n"
    "local ttl = redis.call('PTTL', KEYS[1])\n"
    "if c == 0 then redis.call('SET', KEYS[1], ARGV[1], 'PX', '3599999') return 1 end\n"
    "return redis.call('INCRBY', KEYS[1], ARGV[1])\n";
const char* kFloorSlidingWindow =
    "local t = redis.call('TIME')\n"
    "local v = redis.call('GET', KEYS[1])\n"
    "if v then redis.call('SETRANGE', KEYS[1], 8, '0123456789abcdef') return 1 end\n"
    "redis.call('SET', KEYS[1], '0123456789abcdef0123456789abcdef', 'PX', '3960000')\n"
    "return 1\n";
// The minimal GCRA with its two numbers written in, called with the library's 6 arguments: what the argument shape
// alone adds to it.
const char* kMinimalGcraOurArgs =
    "local t = redis.call('TIME')\n"
    "local now = t[1] * 1000000 + t[2]\n"
    "local tat = tonumber(redis.call('GET', KEYS[1])) or now\n"
    "if tat < now then tat = now end\n"
    "local new = tat + ARGV[1] * 3600\n"
    "if new - now > 3600000000000 then return 0 end\n"
    "redis.call('SET', KEYS[1], string.format('%d', new), 'PX', math.ceil((new - now) / 1000))\n"
    "return 1\n";
const std::vector<std::string> kOurArgs = {"1", "1", "", "1000000", "3600000000", "10"};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Redis {
  redisContext* c = nullptr;
  std::string command(const std::vector<std::string>& args) {
    std::vector<const char*> argv;
    std::vector<size_t> lens;
    for (const auto& a : args) argv.push_back(a.data()), lens.push_back(a.size());
    auto* r = static_cast<redisReply*>(redisCommandArgv(c, static_cast<int>(args.size()), argv.data(), lens.data()));
    if (r == nullptr) {
      std::fprintf(stderr, "redis: %s\n", c->errstr);
      std::exit(1);
    }
    std::string out = r->str != nullptr ? std::string(r->str, r->len) : std::to_string(r->integer);
    if (r->type == REDIS_REPLY_ERROR) {
      std::fprintf(stderr, "redis error: %s\n", out.c_str());
      std::exit(1);
    }
    freeReplyObject(r);
    return out;
  }
  // Sends `calls` commands, kDepth in flight; make(i) gives the i-th command's arguments.
  void pipeline(int calls, const std::function<std::vector<std::string>(int)>& make) {
    int sent = 0, received = 0;
    while (received < calls) {
      while (sent < calls && sent - received < kDepth) {
        std::vector<std::string> args = make(sent++);
        std::vector<const char*> argv;
        std::vector<size_t> lens;
        for (const auto& a : args) argv.push_back(a.data()), lens.push_back(a.size());
        redisAppendCommandArgv(c, static_cast<int>(args.size()), argv.data(), lens.data());
      }
      void* r = nullptr;
      if (redisGetReply(c, &r) != REDIS_OK) {
        std::fprintf(stderr, "redis: %s\n", c->errstr);
        std::exit(1);
      }
      auto* reply = static_cast<redisReply*>(r);
      if (reply->type == REDIS_REPLY_ERROR) {
        std::fprintf(stderr, "script error: %s\n", reply->str);
        std::exit(1);
      }
      freeReplyObject(reply);
      ++received;
    }
  }
  // Server µs per EVALSHA over what ran since the last reset.
  double evalsha_usec_per_call() {
    std::string info = command({"INFO", "commandstats"});
    size_t at = info.find("cmdstat_evalsha:");
    if (at == std::string::npos) return 0;
    const double calls = std::atof(info.c_str() + info.find("calls=", at) + 6);
    const double usec = std::atof(info.c_str() + info.find("usec=", at) + 5);
    return calls > 0 ? usec / calls : 0;
  }
};

// A case: a name and what one measured run sends (after CONFIG RESETSTAT); the result is server µs per call.
struct Case {
  std::string name;
  std::function<void(Redis&)> run;
};

std::string load(Redis& r, const std::string& body) { return r.command({"SCRIPT", "LOAD", body}); }

uint64_t next_random(uint64_t& x) {
  x ^= x << 13, x ^= x >> 7, x ^= x << 17;
  return x;
}

// Our script for `limiter`, the library's exact argument shape (prelude.lua), on random keys, with the server clock.
Case ours(Redis& r, const std::string& name, const Limiter& limiter) {
  const auto& policies = limiter.policies();
  const std::string sha = load(r, ratewarden::lua_script(policies[0].algorithm).body);
  return {name, [sha, &limiter](Redis& r) {
            uint64_t x = 88172645463325252ull;
            const auto& ps = limiter.policies();
            r.pipeline(kCalls, [&](int) {
              const std::string key = "bench" + std::to_string(next_random(x) % kKeys);
              std::vector<std::string> a = {"EVALSHA", sha, std::to_string(ps.size())};
              for (size_t i = 0; i < ps.size(); ++i) a.push_back(limiter.storage_key(key, i));
              a.insert(a.end(), {"1", "1", ""});
              for (const auto& p : ps)
                a.insert(a.end(), {std::to_string(p.limit), std::to_string(p.period_us),
                                   std::to_string(p.option_value())});
              return a;
            });
          }};
}

Case minimal(Redis& r, const std::string& name, const char* body, std::vector<std::string> argv) {
  const std::string sha = load(r, body);
  return {name, [sha, argv, name](Redis& r) {
            uint64_t x = 88172645463325252ull;
            r.pipeline(kCalls, [&](int) {
              std::vector<std::string> a = {"EVALSHA", sha, "1", name + ":{bench" +
                                                                     std::to_string(next_random(x) % kKeys) + "}"};
              a.insert(a.end(), argv.begin(), argv.end());
              return a;
            });
          }};
}

// One hot sliding-log key at `limit` per hour under a test clock: prefilled to the limit, then either every call
// expires the oldest entry and appends one (churn: all allowed, the log stays full) or the clock stands still (a
// flood of denials on a full log).
Case hot_log(Redis& r, const std::string& name, int64_t limit, bool churn, std::shared_ptr<int64_t> now) {
  LimiterOptions o;
  o.algorithm = Algorithm::sliding_log;
  Limiter limiter(std::to_string(limit) + "/hour", ratewarden::open_store("memory://"), o);
  const auto& p = limiter.policies()[0];
  const std::string sha = load(r, ratewarden::lua_script(Algorithm::sliding_log).body);
  const std::string key = limiter.storage_key(name, 0);
  const int64_t step = p.period_us / limit;
  *now = 1700000000000000;
  auto args = [=](int64_t t) {
    return std::vector<std::string>{"EVALSHA", sha, "1", key, "1", "1", std::to_string(t), std::to_string(p.limit),
                                    std::to_string(p.period_us), "0"};
  };
  r.command({"DEL", key});
  r.pipeline(static_cast<int>(limit), [&](int) { return args(*now += step); });  // the log is full
  return {name, [=](Redis& r) { r.pipeline(kCalls, [&](int) { return args(churn ? *now += step : *now); }); }};
}

// The memory store's sliding log on one hot key at `limit`, churning as above: ns per hit.
double memory_hot_log_ns(int64_t limit) {
  auto t = std::make_shared<int64_t>(1000000);
  auto store = ratewarden::open_store("memory://", [t] { return *t; });
  LimiterOptions o;
  o.algorithm = Algorithm::sliding_log;
  Limiter limiter(std::to_string(limit) + "/hour", store, o);
  const int64_t step = limiter.policies()[0].period_us / limit;
  for (int64_t i = 0; i < limit; ++i, *t += step) limiter.hit("hot");
  const int calls = 200000;
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < calls; ++i, *t += step) limiter.hit("hot");
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / calls;
}

}  // namespace

int main() {
  const BenchRedis redis;
  const std::string& host = redis.host;
  const int port = redis.port;
  Redis r;
  r.c = redisConnect(host.c_str(), port);
  if (r.c == nullptr || r.c->err) {
    std::fprintf(stderr, "cannot connect to redis at %s:%d\n", host.c_str(), port);
    return 1;
  }

  // Every call is allowed and writes: the costly path.
  auto memory = ratewarden::open_store("memory://");
  // 1,000,000 per hour: every call allowed (a key gets a few calls a round), and a sliding window's allowed
  // decision fits its one-integer reply (reset_after * (limit + 1) < 2^53); "sliding_window, limit 1e9" is the
  // largest limit, whose decisions take the table reply.
  const char* kRate = "1000000/hour";
  std::map<Algorithm, std::unique_ptr<Limiter>> one, two;
  for (const auto& info : ratewarden::kAlgorithms) {
    const Algorithm a = info.algorithm;
    LimiterOptions o;
    o.algorithm = a;
    one[a] = std::make_unique<Limiter>(kRate, memory, o);
    two[a] = std::make_unique<Limiter>(std::string(kRate) + "; 1000000/day", memory, o);
  }
  LimiterOptions sw;
  sw.algorithm = Algorithm::sliding_window;
  Limiter sw_huge("1000000000/hour", memory, sw);
  std::vector<Case> cases;
  cases.push_back(minimal(r, "minimal fixed window", kMinimalFixedWindow, {"1", "3600000"}));
  // T = 3600 µs per token, tolerance 1e9 tokens' worth: always allowed, as the policy above.
  cases.push_back(minimal(r, "floor fixed window", kFloorFixedWindow, kOurArgs));
  cases.push_back(minimal(r, "floor sliding window", kFloorSlidingWindow, kOurArgs));
  cases.push_back(ours(r, "sliding_window, limit 1e9", sw_huge));
  cases.push_back(minimal(r, "minimal gcra", kMinimalGcra, {"1", "3600", "3600000000000"}));
  cases.push_back(minimal(r, "minimal gcra, our arguments", kMinimalGcraOurArgs, kOurArgs));
  for (const auto& info : ratewarden::kAlgorithms) {
    const Algorithm a = info.algorithm;
    const std::string name(ratewarden::algorithm_name(a));
    cases.push_back(ours(r, name, *one[a]));
    cases.push_back(ours(r, name + " x2", *two[a]));
  }
  const std::vector<int64_t> log_limits = {10, 1000, 100000};
  for (int64_t limit : log_limits)
    for (bool churn : {true, false})
      if (!kSkipLog)
        cases.push_back(hot_log(r, std::string(churn ? "log churn " : "log denied ") + std::to_string(limit), limit,
                              churn, std::make_shared<int64_t>(0)));

  std::map<std::string, std::vector<double>> us;
  for (int round = 0; round < kRounds; ++round) {
    // Every other round in reverse order: no script is always measured right after the same other one.
    std::reverse(cases.begin(), cases.end());
    for (Case& c : cases) {
      r.command({"CONFIG", "RESETSTAT"});
      c.run(r);
      us[c.name].push_back(r.evalsha_usec_per_call());
    }
    std::fprintf(stderr, "round %d/%d done\n", round + 1, kRounds);
  }
  std::map<std::string, double> m;
  for (auto& [name, v] : us) m[name] = median(v);

  std::printf("Server cost per EVALSHA (INFO commandstats), median of %d interleaved rounds of %d calls, %d in "
              "flight, random keys among %d, every call allowed; floors with our scripts' arguments; each ratio the "
              "median of the rounds' own ratios:\n\n",
              kRounds, kCalls, kDepth, kKeys);
  std::printf("| script | µs per call | compared with | µs per call | ratio | target |\n|---|---|---|---|---|---|\n");
  // The median of the rounds' own ratios: the machine's drift from one round to the next cancels out.
  auto ratio = [&](const std::string& a, const std::string& b) {
    std::vector<double> r;
    for (size_t i = 0; i < us[a].size(); ++i) r.push_back(us[a][i] / us[b][i]);
    return median(r);
  };
  auto row = [&](const std::string& a, const std::string& b, double target) {
    const double x = ratio(a, b);
    std::printf("| %s | %.2f | %s | %.2f | %.2f× | ≤ %.1f× %s |\n", a.c_str(), m[a], b.c_str(), m[b], x, target,
                x <= target ? "met" : "**missed**");
  };
  auto floor_row = [&](const std::string& label, const std::string& a, const std::string& b) {
    std::printf("| %s | %.2f | %s | %.2f | %.2f× | — |\n", label.c_str(), m[a], b.c_str(), m[b], ratio(a, b));
  };
  row("fixed_window", "minimal fixed window", 1.5);
  floor_row("floor fixed window (GET + PTTL + INCRBY)", "floor fixed window", "minimal fixed window");
  row("gcra", "minimal gcra", 1.3);
  row("token_bucket", "minimal gcra", 1.3);
  floor_row("minimal gcra with our 6 arguments", "minimal gcra, our arguments", "minimal gcra");
  row("sliding_window", "minimal fixed window", 2.0);
  row("sliding_window, limit 1e9", "minimal fixed window", 2.0);
  floor_row("floor sliding window (TIME + GET + SETRANGE or SET PX)", "floor sliding window", "minimal fixed window");
  floor_row("sliding_log", "sliding_log", "minimal fixed window");
  for (const auto& info : ratewarden::kAlgorithms) {
    const std::string name(ratewarden::algorithm_name(info.algorithm));
    const double added = ratio(name + " x2", name) - 1;
    std::printf("| %s, 2 policies | %.2f | %s, 1 policy | %.2f | second policy adds %.2f× | ≤ 1.2× %s |\n",
                name.c_str(), m[name + " x2"], name.c_str(), m[name], added, added <= 1.2 ? "met" : "**missed**");
  }
  for (const char* regime : {"churn", "denied"})
    if (!kSkipLog)
      for (int64_t limit : {1000, 100000})
        row(std::string("log ") + regime + " " + std::to_string(limit), std::string("log ") + regime + " 10", 3.0);

  if (kSkipLog) return 0;
  std::printf("\nMemory store, sliding log, one hot key churning at its limit (ns per hit):\n\n");
  std::printf("| limit | ns per hit | ratio to limit 10 | target |\n|---|---|---|---|\n");
  std::vector<double> base, big1, big2;
  for (int round = 0; round < kRounds; ++round) {
    base.push_back(memory_hot_log_ns(10));
    big1.push_back(memory_hot_log_ns(1000));
    big2.push_back(memory_hot_log_ns(100000));
  }
  const double b = median(base);
  std::printf("| 10 | %.0f | 1.00× | |\n", b);
  for (auto [limit, v] : {std::pair<int, double>{1000, median(big1)}, {100000, median(big2)}})
    std::printf("| %d | %.0f | %.2f× | ≤ 3× %s |\n", limit, v, v / b, v / b <= 3 ? "met" : "**missed**");

  redisFree(r.c);
  return 0;
}
