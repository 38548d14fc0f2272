// Several policies on one key, the C++ twin of decide_all.lua. Allowed: report the tightest policy (the IETF rule:
// lowest remaining). Denied: report the policy that holds the caller back longest, so that its fields agree with the
// retry_after the caller gets.
#include <algorithm>

#include "ratewarden/algorithms.hpp"
#include "ratewarden/errors.hpp"

namespace ratewarden {

namespace {

// Mode::reserve: the earliest instant, no later than now + max_wait, at which a hit is allowed by every policy, and
// the hit charged at that instant. gcra and token_bucket only: their retry_after is exact (a hit at now +
// retry_after is allowed) and their states take a charge dated in the future, which calls made before it see.
Decision reserve_all(const Policy* policies, AlgorithmState* const* states, size_t count, int64_t now, int64_t cost,
                     int64_t max_wait, int64_t* expires_at, std::vector<Decision>& decisions) {
  int64_t wait = 0;
  for (size_t i = 0; i < count; ++i) {
    expires_at[i] = evaluate(*states[i], now, policies[i], cost, Mode::peek, decisions[i]);
    wait = std::max(wait, decisions[i].retry_after_us);
  }
  if (wait > max_wait) return count == 1 ? decisions[0] : combine_decisions(decisions);  // nothing charged
  for (size_t i = 0; i < count; ++i) {
    expires_at[i] = evaluate(*states[i], now + wait, policies[i], cost, Mode::hit, decisions[i]);
  }
  Decision d = count == 1 ? decisions[0] : combine_decisions(decisions);
  d.reset_after_us += wait;  // from now, as every duration of a decision
  d.wait_us = wait;
  // The one number a gcra / token_bucket state is (its expiry: the TAT, the full-at instant). With several policies
  // one number cannot prove that nothing was charged after the slot on every one of them: no ticket.
  d.ticket = count == 1 ? expires_at[0] : 0;
  return d;
}

// Mode::cancel, one policy: gives the reservation's `cost` back when the state is still what that reservation left
// (`ticket`), i.e. nothing was charged after it; later slots then stay where they are. Otherwise the slot stays
// spent: giving it back would let a newcomer share a later caller's slot. Once the state is past its ticket (the key
// is full again, or absent) there is nothing to give back. allowed = given back; the rest is a peek's.
Decision cancel_one(const Policy& policy, AlgorithmState& state, int64_t now, int64_t cost, int64_t ticket,
                    int64_t* expires_at) {
  Decision d;
  bool given = false;
  const int64_t need = cost * policy.interval_us();
  // A state past its ticket has given everything back by itself (and a store may have dropped it).
  if (ticket > now) {
    if (auto* g = std::get_if<GcraState>(&state)) {
      given = g->tat_us == ticket;
      if (given) g->tat_us -= need;
    } else if (auto* b = std::get_if<TokenBucketState>(&state)) {
      given = !b->fresh && b->last_us + policy.burst * policy.interval_us() - b->credit_us == ticket;
      if (given) b->credit_us += need;  // full_at - need; a credit above cap is taken down to it by the next call
    }
  }
  *expires_at = evaluate(state, now, policy, cost, Mode::peek, d);
  d.allowed = given;
  return d;
}

}  // namespace

Decision combine_decisions(const std::vector<Decision>& decisions) {
  bool allowed = true;
  for (const Decision& d : decisions) allowed = allowed && d.allowed;
  const size_t none = decisions.size();
  size_t chosen = none;
  for (size_t i = 0; i < decisions.size(); ++i) {
    const Decision& d = decisions[i];
    if (d.allowed != allowed) continue;  // a denial reports a denying policy
    // The longest retry_after, then the lowest remaining; earlier policies win ties.
    if (chosen == none || d.retry_after_us > decisions[chosen].retry_after_us ||
        (d.retry_after_us == decisions[chosen].retry_after_us && d.remaining < decisions[chosen].remaining))
      chosen = i;
  }
  Decision out = decisions[chosen];
  out.policy_index = static_cast<int32_t>(chosen);
  return out;
}

Decision decide_all(const Policy* policies, AlgorithmState* const* states, size_t count, int64_t now, int64_t cost,
                    Mode mode, int64_t* expires_at, int64_t mode_arg) {
  if (mode == Mode::cancel) {
    if (count != 1) throw InvalidArgument("cancel: a reservation on several policies cannot be given back");
    return cancel_one(policies[0], *states[0], now, cost, mode_arg, expires_at);
  }
  if (count == 1 && mode != Mode::reserve) {
    // One policy decides alone: a hit evaluates once.
    Decision d;
    expires_at[0] = evaluate(*states[0], now, policies[0], cost, mode, d);
    return d;
  }
  // Kept per thread: a call allocates nothing once its thread has made one as large.
  thread_local std::vector<Decision> decisions;
  decisions.resize(count);
  if (mode == Mode::reserve) return reserve_all(policies, states, count, now, cost, mode_arg, expires_at, decisions);
  if (mode == Mode::refund) {  // every policy gives back, then decides as a peek
    for (size_t i = 0; i < count; ++i) expires_at[i] = evaluate(*states[i], now, policies[i], cost, mode, decisions[i]);
    return combine_decisions(decisions);
  }
  // A hit peeks at every policy, then charges them all if each allows it. The last one is evaluated as a hit at once
  // when every other allows: a denied hit changes its state as a peek would and decides as one (every algorithm
  // charges only when it allows a hit), and once the last has allowed, the others, which nothing changed, allow too.
  const size_t last = count - 1;
  bool all_allowed = true;
  for (size_t i = 0; i < last; ++i) {
    expires_at[i] = evaluate(*states[i], now, policies[i], cost, Mode::peek, decisions[i]);
    all_allowed = all_allowed && decisions[i].allowed;
  }
  const Mode last_mode = all_allowed ? mode : Mode::peek;
  expires_at[last] = evaluate(*states[last], now, policies[last], cost, last_mode, decisions[last]);
  if (last_mode == Mode::hit && decisions[last].allowed) {
    for (size_t i = 0; i < last; ++i) expires_at[i] = evaluate(*states[i], now, policies[i], cost, mode, decisions[i]);
  }
  return combine_decisions(decisions);
}

}  // namespace ratewarden
