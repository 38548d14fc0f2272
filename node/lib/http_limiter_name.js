'use strict';
// The name an HTTP limit's figures count under (the Limiter's `name`: the `limiter` label of
// ratewarden_decisions_total): what its keys count under — the route's name (route_name.js), ranked among the
// route's own limits (`/login`, `/login#2`), or the limit's scope (a named one, or the one made from what it counts:
// `~3f9a1c22d0.1`) — a space, then its rates as the core writes them (`5/60s`; several joined by `; `). So the
// names are as many as the configuration's limits, never more (no raw path, no key), and a route's limit has the
// same name in every adapter of every language. The twin of python/src/ratewarden/_limiter_name.py; both run
// tests/conformance/limiter_names.json.

// The core's bound on a Limiter's name, in bytes of UTF-8.
const MAX_NAME_BYTES = 200;

// policiesOf()'s rates as one text: '10/1s; 1000/3600s'.
const ratesText = (rates) => rates.map((r) => r.text).join('; ');

// `<scope> <rates>`, cut to its first 200 bytes at a character's boundary.
function limiterName(scope, rates) {
  const name = `${scope} ${rates}`;
  const bytes = Buffer.from(name);
  if (bytes.length <= MAX_NAME_BYTES) return name;
  let end = MAX_NAME_BYTES;
  while (end > 0 && (bytes[end] & 0xc0) === 0x80) end--;  // a character cut in two is left out
  return bytes.subarray(0, end).toString();
}

module.exports = { limiterName, ratesText };
