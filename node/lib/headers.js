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

const windowSeconds = (q) => Math.ceil(q.periodMs / 1000);

// The fields of the responses on which a fixed set of limits report: `quotas` holds each limit's policies, in the
// limiter's order ({ name, limit, periodMs }). What depends only on them (the policies' field texts) is built once,
// here; each call adds only the decisions' numbers. `style` is one of STYLES or false; `legacy` adds X-RateLimit-*.
class Fields {
  constructor(quotas, style, legacy) {
    this.style = style;
    this.legacy = legacy;
    this.names = quotas.map((qs) => qs.map((q) => sfString(q.name)));  // every name checked, whatever the style
    this.policy = quotas.flatMap((qs, i) => qs.map((q, j) => `${this.names[i][j]};q=${q.limit};w=${windowSeconds(q)}`))
      .join(', ');
    this.shortPolicies = quotas.map((qs) => qs.map((q) => `${q.limit};w=${windowSeconds(q)}`).join(', '));
  }

  // The fields, as [name, value] pairs, for one decision per limit (undefined: not checked); `nowMs` (the Unix
  // time) matters only to X-RateLimit-Reset. A denial always gets Retry-After. No decision, no field. The fields
  // that hold one decision (draft-6/7, legacy, Retry-After) show the denial if there is one, else the lowest
  // remaining, the first of equals.
  of(decisions, nowMs) {
    let shown = 0;
    let d = decisions[0];
    if (decisions.length > 1) {
      d = undefined;
      for (let i = 0; i < decisions.length; i++) {
        const x = decisions[i];
        if (x === undefined) continue;
        if (!x.allowed) {
          [shown, d] = [i, x];
          break;
        }
        if (d === undefined || x.remaining < d.remaining) [shown, d] = [i, x];
      }
    }
    if (d === undefined) return [];
    const window = windowOf(d);
    const fields = [];
    if (this.style === 'draft-8') {
      const items = decisions.length === 1 ? `${this.names[0][d.policyIndex]};r=${d.remaining};t=${window}`
        : decisions.flatMap((x, i) => (x === undefined ? []
          : [`${this.names[i][x.policyIndex]};r=${x.remaining};t=${windowOf(x)}`])).join(', ');
      fields.push(['RateLimit-Policy', this.policy], ['RateLimit', items]);
    } else if (this.style === 'draft-7') {
      fields.push(['RateLimit-Policy', this.shortPolicies[shown]],
        ['RateLimit', `limit=${d.limit}, remaining=${d.remaining}, reset=${window}`]);
    } else if (this.style === 'draft-6') {
      fields.push(['RateLimit-Policy', this.shortPolicies[shown]], ['RateLimit-Limit', String(d.limit)],
        ['RateLimit-Remaining', String(d.remaining)], ['RateLimit-Reset', String(window)]);
    }
    if (this.legacy) {
      fields.push(['X-RateLimit-Limit', String(d.limit)], ['X-RateLimit-Remaining', String(d.remaining)],
        ['X-RateLimit-Reset', String(ceilSeconds(nowMs * 1000 + d.resetAfterUs))]);  // Unix time of a full quota
    }
    if (!d.allowed) fields.push(['Retry-After', String(window)]);  // the wait, as t
    return fields;
  }
}

// The fields of a response on which `reports` were made, as [name, value] pairs: a report is one limit of the
// response, { quotas, decision } (decision undefined when the limit was not checked on this request). Fields with
// its texts built for this one call.
function rateLimitFields(reports, style, legacy, nowMs) {
  return new Fields(reports.map((r) => r.quotas), style, legacy).of(reports.map((r) => r.decision), nowMs);
}

module.exports = { STYLES, Fields, rateLimitFields, sfString };
