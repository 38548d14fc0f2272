// Algorithm names, policy validation and description.
#include <string>

#include "ratewarden/errors.hpp"
#include "ratewarden/policy.hpp"

namespace ratewarden {
namespace {

constexpr Algorithm kAlgorithms[] = {Algorithm::fixed_window, Algorithm::sliding_log, Algorithm::sliding_window,
                                     Algorithm::token_bucket, Algorithm::gcra};

std::string period_text(int64_t period_us) {
  int64_t ms = period_us / 1000;
  if (ms % 1000 != 0) return std::to_string(ms) + "ms";
  return std::to_string(ms / 1000) + "s";
}

}  // namespace

std::string_view algorithm_name(Algorithm algorithm) {
  switch (algorithm) {
    case Algorithm::fixed_window: return "fixed_window";
    case Algorithm::sliding_log: return "sliding_log";
    case Algorithm::sliding_window: return "sliding_window";
    case Algorithm::token_bucket: return "token_bucket";
    case Algorithm::gcra: return "gcra";
  }
  return "unknown";
}

Algorithm parse_algorithm(std::string_view name) {
  for (Algorithm a : kAlgorithms)
    if (algorithm_name(a) == name) return a;
  throw InvalidArgument("unknown algorithm \"" + std::string(name.substr(0, 100)) +
                        "\": expected one of fixed_window, sliding_log, sliding_window, token_bucket, gcra");
}

std::vector<Policy> make_policies(const std::vector<Rate>& rates, const PolicyOptions& options) {
  const std::string algo(algorithm_name(options.algorithm));
  if (rates.empty()) throw InvalidArgument("a limiter needs at least one rate limit");
  Policy base;
  base.algorithm = options.algorithm;
  if (options.burst) {
    if (!base.uses_burst())
      throw InvalidArgument("burst applies to token_bucket and gcra, not to " + algo);
    if (rates.size() > 1)
      throw InvalidArgument("burst needs a single rate limit; got " + std::to_string(rates.size()));
    if (*options.burst < 1 || *options.burst > kMaxLimit)
      throw InvalidArgument("burst must be between 1 and 1000000000, got " + std::to_string(*options.burst));
  }
  if (options.buckets) {
    if (options.algorithm != Algorithm::sliding_window)
      throw InvalidArgument("buckets applies to sliding_window, not to " + algo);
    if (*options.buckets < 1 || *options.buckets > kMaxBuckets)
      throw InvalidArgument("buckets must be between 1 and 1000, got " + std::to_string(*options.buckets));
  }
  std::vector<Policy> policies;
  for (const Rate& rate : rates) {
    Policy p = base;
    p.limit = rate.limit;
    p.period_us = rate.period_us;
    if (p.limit < 1 || p.limit > kMaxLimit)
      throw InvalidArgument("limit must be between 1 and 1000000000, got " + std::to_string(p.limit));
    if (p.period_us < 1000 || p.period_us > kMaxPeriodUs || p.period_us % 1000 != 0)
      throw InvalidArgument("period must be a whole number of milliseconds between 1 ms and 3650 days");
    p.burst = p.uses_burst() ? options.burst.value_or(p.limit) : 0;
    p.buckets = options.algorithm == Algorithm::sliding_window ? options.buckets.value_or(kDefaultBuckets) : 0;
    if (p.uses_burst() && p.burst > kMaxToleranceUs / p.interval_us())
      throw InvalidArgument("burst x period / limit is too large for " + describe(p) + " (at most 2^50 µs)");
    if (p.algorithm == Algorithm::sliding_window && p.bucket_width_us() > kMaxBucketWidthUs)
      throw InvalidArgument("sliding_window buckets of " + describe(p) + " would be over 104 days wide; use more "
                            "buckets (" + std::to_string(p.buckets) + " now) or another algorithm");
    policies.push_back(p);
  }
  return policies;
}

std::string describe(const Policy& policy) {
  return std::to_string(policy.limit) + "/" + period_text(policy.period_us);
}

}  // namespace ratewarden
