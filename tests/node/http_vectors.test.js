'use strict';
// The shared HTTP vectors through the Node helpers: tests/conformance/headers.json against node/lib/headers.js (the
// fields Express sends), tests/conformance/client_keys.json against clientKey (Express's default key),
// route_names.json against node/lib/route_name.js, limiter_names.json against node/lib/http_limiter_name.js (with the
// core's rates, as the HTTP layer takes them) and refusals.json against the HTTP layer's fixed bodies.
// tests/python/test_http_vectors.py runs the same files against the Python modules.

const { describe, test } = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');

const { STYLES, rateLimitFields, sfString } = require('../../node/lib/headers');
const { clientKey } = require('ratewarden/express');

const conformance = path.join(__dirname, '..', 'conformance');
const headers = require(path.join(conformance, 'headers.json'));
const clientKeys = require(path.join(conformance, 'client_keys.json'));

function report(limit) {
  const quotas = limit.policies.map((p) => ({ name: p.name, limit: p.limit, periodMs: p.period_us / 1000 }));
  const d = limit.decision;
  if (d === null) return { quotas, decision: undefined };
  return {
    quotas,
    decision: {
      allowed: d.allowed,
      limit: d.limit,
      remaining: d.remaining,
      resetAfterUs: d.reset_after_us,
      retryAfterUs: d.retry_after_us,
      used: d.used,
      policyIndex: d.policy_index,
    },
  };
}

describe('headers.json', () => {
  for (const c of headers.cases) {
    test(c.name, () => {
      for (const style of [...STYLES, false]) {
        for (const legacy of [false, true]) {
          const wanted = { ...c.expect[style || 'none'], ...(legacy ? c.expect.legacy : {}) };
          const fields = rateLimitFields(c.limits.map(report), style, legacy, headers.now_us / 1000);
          assert.equal(new Set(fields.map(([name]) => name)).size, fields.length, 'each field once');
          assert.deepEqual(Object.fromEntries(fields), wanted, `${style}, legacy ${legacy}`);
        }
      }
    });
  }

  test('policy names are Structured Field Strings', () => {
    for (const [text, expected] of headers.names) {
      if (expected === null) assert.throws(() => sfString(text), /printable ASCII/, text);
      else assert.equal(sfString(text), expected);
    }
  });
});

describe('client_keys.json', () => {
  for (const c of clientKeys.cases) {
    test(`${c.address} /${c.ipv6_subnet}`, () => assert.equal(clientKey(c.address, c.ipv6_subnet), c.key));
  }

  test('the default mask is /56', () => assert.equal(clientKey('2001:db8:abcd:12ff::1'), '2001:db8:abcd:1200::/56'));
});

describe('route_names.json', () => {
  const { routeName } = require('../../node/lib/route_name');
  for (const c of require(path.join(conformance, 'route_names.json')).cases) {
    test(`${c.framework}: ${JSON.stringify(c.template)}`, () => assert.equal(routeName(c.template), c.name));
  }
});

describe('limiter_names.json', () => {
  const native = require('../../node/lib/native');
  const { routeName } = require('../../node/lib/route_name');
  const { limiterName, ratesText } = require('../../node/lib/http_limiter_name');
  for (const c of require(path.join(conformance, 'limiter_names.json')).cases) {
    test(`${c.scope ?? `${c.framework}: ${JSON.stringify(c.template).slice(0, 60)}`} ${c.policy}`, () => {
      const route = c.template === undefined ? undefined : routeName(c.template);
      const scope = c.scope ?? (c.rank > 1 ? `${route}#${c.rank}` : route);
      const rates = ratesText(native.policiesOf(c.policy, { algorithm: c.algorithm }));
      assert.equal(limiterName(scope, rates), c.name);
    });
  }
});

test('refusals.json: the bodies no option words', () => {
  const { KEY_ERROR_BODY } = require('../../node/lib/http');
  assert.equal(KEY_ERROR_BODY, require(path.join(conformance, 'refusals.json')).no_key.body);
});
