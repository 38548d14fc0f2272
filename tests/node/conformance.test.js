'use strict';
// The shared conformance vectors (tests/conformance/vectors.json) through the JS API, on the memory store and on
// Redis, with a TestClock standing in for the memory store's clock and for Redis TIME. Each step is checked on the
// exact µs fields and on the rounded-up ms fields.

const { after, before, describe, test } = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');

const { Limiter, Store, TestClock } = require('ratewarden');
const native = require('../../node/lib/native');
const { RedisServer } = require('./helpers/redis_server');

const vectors = require(path.join(__dirname, '..', 'conformance', 'vectors.json'));

function expected(e) {
  return {
    allowed: e.allowed,
    limit: e.limit,
    remaining: e.remaining,
    resetAfterMs: Math.ceil(e.reset_after / 1000),
    retryAfterMs: Math.ceil(e.retry_after / 1000),
    used: e.used,
    policyIndex: e.policy_index ?? 0,
    resetAfterUs: e.reset_after,
    retryAfterUs: e.retry_after,
  };
}

async function runCase(c, prefix, url) {
  const clock = new TestClock(vectors.base_us);
  const limiter = new Limiter({
    policy: c.policy,
    store: new Store(url, { testClock: clock }),
    algorithm: c.algorithm,
    burst: c.burst ?? undefined,
    buckets: c.buckets ?? undefined,
    prefix,
  });
  for (const [n, step] of c.steps.entries()) {
    clock.nowUs = vectors.base_us + step.t;
    const where = `${c.name}, step ${n}: ${JSON.stringify(step)}`;
    if (step.op === 'reset') {
      assert.equal(await limiter.reset(step.key), undefined, where);
      continue;
    }
    const d = step.op === 'hit' ? await limiter.hit(step.key, { cost: step.cost }) : await limiter.peek(step.key, { cost: step.cost });
    assert.deepEqual(d, expected(step.expect), where);
  }
}

test('the vectors cover every algorithm', () => {
  const seen = new Set(vectors.cases.map((c) => c.algorithm));
  assert.deepEqual([...seen].sort(), native.algorithms().sort());
});

describe('conformance on the memory store', () => {
  for (const [index, c] of vectors.cases.entries()) test(c.name, () => runCase(c, `conformance${index}`, 'memory://'));
});

describe('conformance on Redis', () => {
  const redis = new RedisServer();
  before(() => redis.start());
  after(() => redis.close());
  for (const [index, c] of vectors.cases.entries()) test(c.name, () => runCase(c, `conformance${index}`, redis.url));
});
