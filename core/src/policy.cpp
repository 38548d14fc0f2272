// Algorithm names, policy validation and description.
#include <string>

#include "ratewarden/errors.hpp"
#include "ratewarden/policy.hpp"

namespace ratewarden {
namespace {

std::string period_text(int64_t period_us) {
  int64_t ms = period_us / 1000;
  if (ms % 1000 != 0) return std::to_string(ms) + "ms";
  return std::to_string(ms / 1000) + "s";
}

// The names of the algorithms that take `option`: "a", "a and b", "a, b and c".
std::string names_taking(AlgorithmOption option) {
  std::vector<std::string_view> names;
  for (const AlgorithmInfo& a : kAlgorithms)
    if (a.option == option) names.push_back(a.name);
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += i + 1 == names.size() ? " and " : ", ";
    out += names[i];
  }
  return out;
}

bool option_is_default(const Policy& p) {
  switch (algorithm_info(p.algorithm).option) {
    case AlgorithmOption::none: return true;
    case AlgorithmOption::burst: return p.burst == p.limit;
    case AlgorithmOption::buckets: return p.buckets == kDefaultBuckets;
  }
  return true;
}

}  // namespace

std::string_view algorithm_name(Algorithm algorithm) { return algorithm_info(algorithm).name; }

Algorithm parse_algorithm(std::string_view name) {
  for (const AlgorithmInfo& a : kAlgorithms)
    if (a.name == name) return a.algorithm;
  std::string expected;
  for (const AlgorithmInfo& a : kAlgorithms) expected += (expected.empty() ? "" : ", ") + std::string(a.name);
  throw InvalidArgument("unknown algorithm \"" + std::string(name.substr(0, 100)) + "\": expected one of " + expected);
}

std::vector<std::string> algorithm_names() {
  std::vector<std::string> names;
  for (const AlgorithmInfo& a : kAlgorithms) names.emplace_back(a.name);
  return names;
}

int64_t Policy::option_value() const {
  switch (algorithm_info(algorithm).option) {
    case AlgorithmOption::none: return 0;
    case AlgorithmOption::burst: return burst;
    case AlgorithmOption::buckets: return buckets;
  }
  return 0;
}

std::vector<Policy> make_policies(const std::vector<Rate>& rates, const PolicyOptions& options) {
  const std::string algo(algorithm_name(options.algorithm));
  if (rates.empty()) throw InvalidArgument("a limiter needs at least one rate limit");
  Policy base;
  base.algorithm = options.algorithm;
  if (options.burst) {
    if (!base.uses_burst())
      throw InvalidArgument("burst applies to " + names_taking(AlgorithmOption::burst) + ", not to " + algo);
    if (rates.size() > 1)
      throw InvalidArgument("burst needs a single rate limit; got " + std::to_string(rates.size()));
    if (*options.burst < 1 || *options.burst > kMaxLimit)
      throw InvalidArgument("burst must be between 1 and 1000000000, got " + std::to_string(*options.burst));
  }
  if (options.buckets) {
    if (!base.uses_buckets())
      throw InvalidArgument("buckets applies to " + names_taking(AlgorithmOption::buckets) + ", not to " + algo);
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
    p.buckets = p.uses_buckets() ? static_cast<int32_t>(options.buckets.value_or(kDefaultBuckets)) : 0;
    if (p.uses_burst() && p.burst > kMaxToleranceUs / p.interval_us())
      throw InvalidArgument("burst x period / limit is too large for " + describe(p) + " (at most 2^50 µs)");
    if (p.uses_buckets() && p.bucket_width_us() > kMaxBucketWidthUs)
      throw InvalidArgument(algo + " buckets of " + describe(p) + " would be over 104 days wide; use more "
                            "buckets (" + std::to_string(p.buckets) + " now) or another algorithm");
    policies.push_back(p);
  }
  return policies;
}

std::string describe(const Policy& policy) {
  return std::to_string(policy.limit) + "/" + period_text(policy.period_us);
}

std::string storage_name(const Policy& policy) {
  std::string s(algorithm_name(policy.algorithm));
  s += ":" + std::to_string(policy.limit) + ":" + std::to_string(policy.period_us / 1000);
  if (!option_is_default(policy)) s += ":" + std::to_string(policy.option_value());
  return s;
}

}  // namespace ratewarden
