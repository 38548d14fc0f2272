// Policies: "100/minute", "10 per second; 1000/hour", with an algorithm and its options.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ratewarden/algorithm_table.hpp"

namespace ratewarden {

// One enumerator per row of algorithm_table.hpp, in table order.
enum class Algorithm {
#define RATEWARDEN_ENUMERATOR(name, State, option, fast) name,
  RATEWARDEN_ALGORITHMS(RATEWARDEN_ENUMERATOR)
#undef RATEWARDEN_ENUMERATOR
};

// The option an algorithm takes besides limit and period: the burst (capacity) or the bucket count (precision).
enum class AlgorithmOption { none, burst, buckets };

struct AlgorithmInfo {
  Algorithm algorithm;
  std::string_view name;
  AlgorithmOption option;
};

// Every algorithm, in table order: kAlgorithms[i].algorithm == Algorithm(i).
inline constexpr AlgorithmInfo kAlgorithms[] = {
#define RATEWARDEN_INFO(name, State, option, fast) {Algorithm::name, #name, AlgorithmOption::option},
    RATEWARDEN_ALGORITHMS(RATEWARDEN_INFO)
#undef RATEWARDEN_INFO
};
inline constexpr size_t kAlgorithmCount = std::size(kAlgorithms);

constexpr const AlgorithmInfo& algorithm_info(Algorithm algorithm) {
  return kAlgorithms[static_cast<size_t>(algorithm)];
}

// "fixed_window", "sliding_log", ... (the names used in the Redis key format and every binding).
std::string_view algorithm_name(Algorithm algorithm);
// Throws InvalidArgument naming the accepted names.
Algorithm parse_algorithm(std::string_view name);
// Every algorithm's name, in table order: the list the bindings offer.
std::vector<std::string> algorithm_names();

// One "limit per period" item of a policy string.
struct Rate {
  int64_t limit = 0;
  int64_t period_us = 0;  // always a whole number of milliseconds
};

// Parses "100/minute", "10 per second", "5 per 30 seconds", "1000/1h", "2/500ms", several joined by ';' or ','.
// Throws InvalidArgument quoting the string and saying what was expected.
std::vector<Rate> parse_rates(std::string_view text);

inline constexpr int64_t kMaxLimit = 1000000000;
inline constexpr int64_t kMaxPeriodUs = 3650LL * 86400 * 1000000;
inline constexpr int32_t kMaxBuckets = 1000;
inline constexpr int32_t kDefaultBuckets = 10;
inline constexpr int64_t kMaxToleranceUs = int64_t{1} << 50;
// sliding_window weighs the oldest bucket in thousandths of its width: width * 1000 stays below 2^53 (~104 days).
inline constexpr int64_t kMaxBucketWidthUs = (int64_t{1} << 53) / 1000;

// A validated policy: everything an algorithm needs. Build it with make_policy.
struct Policy {
  Algorithm algorithm = Algorithm::fixed_window;
  int64_t limit = 0;
  int64_t period_us = 0;
  int64_t burst = 0;    // token_bucket / gcra capacity (= limit unless set)
  int32_t buckets = 0;  // sliding_window precision

  bool uses_burst() const { return algorithm_info(algorithm).option == AlgorithmOption::burst; }
  bool uses_buckets() const { return algorithm_info(algorithm).option == AlgorithmOption::buckets; }
  // The largest cost one call may ask for.
  int64_t capacity() const { return uses_burst() ? burst : limit; }
  // token_bucket / gcra: µs per token, rounded up so the rate never exceeds limit per period.
  int64_t interval_us() const { return (period_us + limit - 1) / limit; }
  // sliding_window: the width of one bucket.
  int64_t bucket_width_us() const { return period_us / buckets; }
  // The value of the algorithm's option: the burst, the bucket count, or 0 (the scripts' "extra" argument).
  int64_t option_value() const;
};

struct PolicyOptions {
  Algorithm algorithm = Algorithm::fixed_window;
  std::optional<int64_t> burst;    // token_bucket / gcra only; needs a single rate
  std::optional<int64_t> buckets;  // sliding_window only; 1 to kMaxBuckets
};

// Validates every value against docs/algorithms.md's bounds; throws InvalidArgument naming the bad one.
std::vector<Policy> make_policies(const std::vector<Rate>& rates, const PolicyOptions& options);

// The policy in the form of a policy string item, e.g. "100/60s" (used in messages and headers).
std::string describe(const Policy& policy);

// The policy's part of its storage keys, "<algorithm>:<limit>:<period_ms>[:<option>]" (docs/key-format.md). The
// option shows only when it differs from its default, so that states an option changes are kept apart while the
// default keeps a key that names no option.
std::string storage_name(const Policy& policy);

}  // namespace ratewarden
