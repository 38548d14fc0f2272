// Several policies on one key, the C++ twin of decide_all.lua. Allowed: report the tightest policy (the IETF rule:
// lowest remaining). Denied: report the policy that holds the caller back longest, so that its fields agree with the
// retry_after the caller gets.
#include <tuple>

#include "ratewarden/algorithms.hpp"

namespace ratewarden {

Decision combine_decisions(const std::vector<Decision>& decisions) {
  bool allowed = true;
  for (const Decision& d : decisions) allowed = allowed && d.allowed;
  const size_t none = decisions.size();
  size_t chosen = none;
  for (size_t i = 0; i < decisions.size(); ++i) {
    const Decision& d = decisions[i];
    if (d.allowed != allowed) continue;  // a denial reports a denying policy
    // Earlier policies win ties.
    if (chosen == none || std::make_tuple(-d.retry_after_us, d.remaining) <
                              std::make_tuple(-decisions[chosen].retry_after_us, decisions[chosen].remaining))
      chosen = i;
  }
  Decision out = decisions[chosen];
  out.policy_index = static_cast<int32_t>(chosen);
  return out;
}

Decision decide_all(const Policy* policies, AlgorithmState* const* states, size_t count, int64_t now, int64_t cost,
                    Mode mode, int64_t* expires_at) {
  if (count == 1) {
    // One policy decides alone: a hit evaluates once.
    Decision d;
    expires_at[0] = evaluate(*states[0], now, policies[0], cost, mode, d);
    return d;
  }
  // Kept per thread: a call allocates nothing once its thread has made one as large.
  thread_local std::vector<Decision> decisions;
  decisions.resize(count);
  bool all_allowed = true;
  for (size_t i = 0; i < count; ++i) {
    expires_at[i] = evaluate(*states[i], now, policies[i], cost, Mode::peek, decisions[i]);
    all_allowed = all_allowed && decisions[i].allowed;
  }
  if (mode == Mode::hit && all_allowed) {
    for (size_t i = 0; i < count; ++i) {
      expires_at[i] = evaluate(*states[i], now, policies[i], cost, Mode::hit, decisions[i]);
    }
  }
  return combine_decisions(decisions);
}

}  // namespace ratewarden
