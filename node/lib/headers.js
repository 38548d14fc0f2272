'use strict';
// The HTTP fields of rate-limited responses, framework-neutral: RateLimit-Policy and RateLimit as the IETF draft
// "RateLimit header fields for HTTP" defines them (draft-ietf-httpapi-ratelimit-headers: the form of drafts 8 to 11,
// and the older forms of drafts 6 and 7), Retry-After, and the legacy X-RateLimit-* trio.
//
// Python's ratewarden/_headers.py is the same module: both run tests/conformance/headers.json, so they cannot
// drift. Durations are whole seconds rounded up: a client that waits that long is never early.

const { invalidArgument } = require('./errors');

const STYLES = ['draft-6', 'draft-7', 'draft-8'];

const ceilSeconds = (us) => Math.ceil(us / 1e6);

// `text` as a Structured Field String (RFC 8941 §3.3.3); throws when it is not printable ASCII.
function sfString(text) {
  if (!/^[\x20-\x7e]*$/.test(text)) {
    throw invalidArgument(`a policy name must be printable ASCII, got ${JSON.stringify(text)}`);
  }
  return `"${text.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
}

// t (and draft-6/7's reset): until the quota is full again, or for a denial until the call is allowed, so that
// Retry-After never points before the end of the effective window (the draft's §6).
const windowOf = (d) => ceilSeconds(d.allowed ? d.resetAfterUs : d.retryAfterUs);

// draft-8's items: a policy, and the service limit of a checked limit, named after the policy its decision reports.
const policyItem = (q) => `${sfString(q.name)};q=${q.limit};w=${Math.ceil(q.periodMs / 1000)}`;
const limitItem = ({ quotas, decision: d }) =>
  `${sfString(quotas[d.policyIndex].name)};r=${d.remaining};t=${windowOf(d)}`;

// The fields of a response on which `reports` were made, as [name, value] pairs. A report is one limit of the
// response: { quotas, decision }, its policies in the limiter's order ({ name, limit, periodMs }) and its decision
// (undefined when the limit was not checked on this request). `style` is one of STYLES or false; `legacy` adds
// X-RateLimit-*; `nowMs` is the Unix time (for X-RateLimit-Reset). A denial always gets Retry-After. No report with
// a decision, no field. The fields that hold one decision (draft-6/7, legacy, Retry-After) show the denial if there
// is one, else the lowest remaining, the first of equals.
function rateLimitFields(reports, style, legacy, nowMs) {
  const decided = reports.filter((r) => r.decision !== undefined);
  if (decided.length === 0) return [];
  const shown = decided.find((r) => !r.decision.allowed) ??
    decided.reduce((low, r) => (r.decision.remaining < low.decision.remaining ? r : low));
  const d = shown.decision;
  const fields = [];
  if (style === 'draft-8') {
    fields.push(['RateLimit-Policy', reports.flatMap((r) => r.quotas.map(policyItem)).join(', ')],
      ['RateLimit', decided.map(limitItem).join(', ')]);
  } else if (style === 'draft-6' || style === 'draft-7') {
    const policies = shown.quotas.map((q) => `${q.limit};w=${Math.ceil(q.periodMs / 1000)}`);
    fields.push(['RateLimit-Policy', policies.join(', ')]);
    if (style === 'draft-7') {
      fields.push(['RateLimit', `limit=${d.limit}, remaining=${d.remaining}, reset=${windowOf(d)}`]);
    } else {
      fields.push(['RateLimit-Limit', String(d.limit)], ['RateLimit-Remaining', String(d.remaining)],
        ['RateLimit-Reset', String(windowOf(d))]);
    }
  }
  if (legacy) {
    fields.push(['X-RateLimit-Limit', String(d.limit)], ['X-RateLimit-Remaining', String(d.remaining)],
      ['X-RateLimit-Reset', String(ceilSeconds(nowMs * 1000 + d.resetAfterUs))]);  // Unix time of a full quota
  }
  if (!d.allowed) fields.push(['Retry-After', String(ceilSeconds(d.retryAfterUs))]);
  return fields;
}

module.exports = { STYLES, rateLimitFields, sfString };
