// Several policies on one key. Allowed: report the tightest policy (the IETF rule: lowest remaining). Denied: report
// the policy that holds the caller back longest, so that its fields agree with the retry_after the caller gets.
#include <tuple>

#include "ratewarden/algorithms.hpp"

namespace ratewarden {

Decision combine_decisions(const std::vector<Decision>& decisions) {
  bool allowed = true;
  for (const Decision& d : decisions) allowed = allowed && d.allowed;
  const Decision* chosen = nullptr;
  for (const Decision& d : decisions) {
    if (d.allowed != allowed) continue;  // a denial reports a denying policy
    // Earlier policies win ties.
    if (chosen == nullptr || std::make_tuple(-d.retry_after_us, d.remaining) <
                                 std::make_tuple(-chosen->retry_after_us, chosen->remaining))
      chosen = &d;
  }
  return *chosen;
}

}  // namespace ratewarden
