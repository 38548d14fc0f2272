#pragma once

#include <cstdint>

namespace ratewarden {

// The answer to one hit or peek. Durations are in microseconds (docs/algorithms.md).
struct Decision {
  bool allowed = false;
  int64_t limit = 0;           // the capacity of the policy reported
  int64_t remaining = 0;       // what is left after this call
  int64_t reset_after_us = 0;  // time until the key is back to full quota
  int64_t retry_after_us = 0;  // 0 when allowed; else a hit at now + retry_after is allowed (if no other traffic)
  int64_t used = 0;            // consumed in the current window / bucket
  // The index, in the call's policies, of the policy this decision reports (docs/algorithms.md, "Several policies
  // on one key"); 0 for a single policy.
  int32_t policy_index = 0;

  bool operator==(const Decision& o) const {
    return allowed == o.allowed && limit == o.limit && remaining == o.remaining &&
           reset_after_us == o.reset_after_us && retry_after_us == o.retry_after_us && used == o.used &&
           policy_index == o.policy_index;
  }
  bool operator!=(const Decision& o) const { return !(*this == o); }
};

// hit consumes the cost when allowed; peek never consumes.
enum class Mode { hit, peek };

}  // namespace ratewarden
