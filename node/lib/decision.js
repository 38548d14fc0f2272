'use strict';
// Decisions come from the addon as 9 numbers each (allowed, limit, remaining, reset_after_us, retry_after_us, used,
// policy_index, and a reservation's wait_us and ticket: node/src/convert.hpp). Durations are given in ms rounded UP,
// so that waiting that long always works; the exact µs are kept too.

const FIELDS = 9;

function decisionAt(values, i) {
  const resetAfterUs = values[i + 3];
  const retryAfterUs = values[i + 4];
  return {
    allowed: values[i] === 1,
    limit: values[i + 1],
    remaining: values[i + 2],
    resetAfterMs: Math.ceil(resetAfterUs / 1000),
    retryAfterMs: Math.ceil(retryAfterUs / 1000),
    used: values[i + 5],
    policyIndex: values[i + 6],
    resetAfterUs,
    retryAfterUs,
  };
}

function decisionList(values) {
  const out = new Array(values.length / FIELDS);
  for (let i = 0; i < out.length; i++) out[i] = decisionAt(values, i * FIELDS);
  return out;
}

// A reservation's decision (limiter.reserve): the decision, how long to wait before acting, and its ticket (what
// cancel needs to give the slot back; 0 when it cannot be).
function reservationAt(values, i) {
  const d = decisionAt(values, i);
  d.waitUs = values[i + 7];
  d.waitMs = Math.ceil(d.waitUs / 1000);
  d.ticket = values[i + 8];
  return d;
}

module.exports = { FIELDS, decisionAt, decisionList, reservationAt };
