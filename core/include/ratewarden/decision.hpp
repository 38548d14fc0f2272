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
  // Set by a reservation only (Limiter::reserve, docs/algorithms.md "Reservations"). wait_us: how long the caller
  // waits before using the slot it was given (0: now). ticket: what Limiter::cancel needs to give the slot back
  // (the key's state right after the reservation, in the store's clock); 0 when it cannot be given back.
  int64_t wait_us = 0;
  int64_t ticket = 0;

  bool operator==(const Decision& o) const {
    return allowed == o.allowed && limit == o.limit && remaining == o.remaining &&
           reset_after_us == o.reset_after_us && retry_after_us == o.retry_after_us && used == o.used &&
           policy_index == o.policy_index && wait_us == o.wait_us && ticket == o.ticket;
  }
  bool operator!=(const Decision& o) const { return !(*this == o); }
};

// hit consumes the cost when allowed; peek never consumes. refund gives back `cost` of what was charged most
// recently (docs/algorithms.md, "Refunds"), then decides as a peek. reserve charges a hit at the earliest instant,
// up to StoreCall::max_wait_us ahead, at which every policy allows it; cancel gives a reservation's slot back when
// nothing was charged on the key after it (StoreCall::ticket). Algorithm functions see hit, peek and refund
// (decide_all maps the others onto them); reserve and cancel apply to gcra and token_bucket only.
enum class Mode { hit, peek, reserve, cancel, refund };

// Whether a call of this mode may change a state (hit, reserve, cancel: only when its decision is allowed; refund:
// a live state, whatever its decision).
inline bool charges(Mode mode) { return mode != Mode::peek; }

}  // namespace ratewarden
