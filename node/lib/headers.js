'use strict';
// The rate-limit header fields of the IETF drafts (draft-ietf-httpapi-ratelimit-headers -06, -07, -08) and the
// legacy X-RateLimit-* trio, in the forms express-rate-limit sends. Seconds are rounded up.

const STYLES = ['draft-6', 'draft-7', 'draft-8'];

// "100-in-1min": the policy name of draft-8 (express-rate-limit's naming).
function policyName(rate) {
  const s = rate.periodMs / 1000;
  let duration;
  if (s < 60) duration = `${s}sec`;
  else if (s < 3600) duration = `${s / 60}min`;
  else if (s < 86400) duration = `${s / 3600}hr${s > 3600 ? 's' : ''}`;
  else duration = `${s / 86400}day${s > 86400 ? 's' : ''}`;
  return `${rate.capacity}-in-${duration}`;
}

// What a limiter sends for each of its decisions, prepared once.
function headerWriter(style, legacy, rates) {
  const windows = rates.map((r) => Math.ceil(r.periodMs / 1000));
  const names = rates.map(policyName);
  let policy = null;
  if (style === 'draft-8') policy = rates.map((r, i) => `"${names[i]}"; q=${r.capacity}; w=${windows[i]}`).join(', ');
  else if (style) policy = rates.map((r, i) => `${r.capacity};w=${windows[i]}`).join(', ');
  // The name of the rate a decision reports (by its capacity; the first on a tie).
  const nameOf = (d) => names[Math.max(0, rates.findIndex((r) => r.capacity === d.limit))];

  return function writeHeaders(res, d, replace) {
    const reset = Math.ceil(d.resetAfterMs / 1000);
    if (style === 'draft-8') {
      res.append('RateLimit-Policy', policy);
      res.append('RateLimit', `"${nameOf(d)}"; r=${d.remaining}; t=${reset}`);
    } else if (style && replace) {
      res.setHeader('RateLimit-Policy', policy);
      if (style === 'draft-7') {
        res.setHeader('RateLimit', `limit=${d.limit}, remaining=${d.remaining}, reset=${reset}`);
      } else {
        res.setHeader('RateLimit-Limit', String(d.limit));
        res.setHeader('RateLimit-Remaining', String(d.remaining));
        res.setHeader('RateLimit-Reset', String(reset));
      }
    }
    if (legacy && replace) {
      res.setHeader('X-RateLimit-Limit', String(d.limit));
      res.setHeader('X-RateLimit-Remaining', String(d.remaining));
      res.setHeader('X-RateLimit-Reset', String(Math.ceil((Date.now() + d.resetAfterMs) / 1000)));
    }
  };
}

module.exports = { STYLES, headerWriter };
