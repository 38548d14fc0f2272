'use strict';
// The shared conformance vectors (tests/conformance/vectors.json) through the JS API, on the memory store, on Redis
// and on PostgreSQL, with a TestClock standing in for the memory store's clock and for the servers' clocks. Each step is checked on the
// exact µs fields and on the rounded-up ms fields. On the memory store every hit step goes through each way of
// hitting: the awaited hit, hitSync, and allowSync (which answers only `allowed`).

const { after, before, describe, test } = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');

const { Limiter, Store, TestClock } = require('ratewarden');
const native = require('../../node/lib/native');
const { PostgresServer, RedisServer } = require('./helpers/redis_server');

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

// The hit of each path, as a decision or (allowSync) as the one field it answers. A cost of 1 is left out, as
// callers do: the addon's path without a cost argument.
const options = (cost) => (cost === 1 ? undefined : { cost });
const HITS = {
  hit: async (limiter, key, cost) => limiter.hit(key, options(cost)),
  hitSync: async (limiter, key, cost) => limiter.hitSync(key, options(cost)),
  allowSync: async (limiter, key, cost) => ({ allowed: limiter.allowSync(key, options(cost)) }),
};

async function runCase(c, prefix, url, via = 'hit') {
  const clock = new TestClock(vectors.base_us);
  const limiter = new Limiter({
    policy: c.policy,
    store: new Store(url, { testClock: clock }),
    algorithm: c.algorithm,
    burst: c.burst ?? undefined,
    buckets: c.buckets ?? undefined,
    prefix,
  });
  const reservations = new Map();  // by step index, for the cancels that name them
  for (const [n, step] of c.steps.entries()) {
    clock.nowUs = vectors.base_us + step.t;
    const where = `${c.name}, step ${n}: ${JSON.stringify(step)}`;
    if (step.op === 'reset') {
      assert.equal(await limiter.reset(step.key), undefined, where);
      continue;
    }
    if (step.op === 'cancel') {
      const given = await limiter.cancel(step.key, reservations.get(step.reservation), options(step.cost));
      assert.equal(given, step.expect.given, where);
      continue;
    }
    if (step.op === 'reserve') {
      const call = limiter.reserve(step.key, { cost: step.cost, maxWaitMs: step.max_wait / 1000 });
      if (step.expect.error !== undefined) {
        await assert.rejects(call, { code: 'ERR_RATEWARDEN_INVALID_ARGUMENT' }, where);
        continue;
      }
      const r = await call;
      reservations.set(n, r);
      const { waitMs, waitUs, ticket, ...d } = r;
      assert.equal(typeof ticket, 'number', where);
      assert.deepEqual({ waitUs, waitMs }, { waitUs: step.expect.wait, waitMs: Math.ceil(step.expect.wait / 1000) }, where);
      assert.deepEqual(d, expected(step.expect), where);
      continue;
    }
    if (step.op === 'hit' && via === 'allowSync') {
      assert.deepEqual(await HITS.allowSync(limiter, step.key, step.cost), { allowed: step.expect.allowed }, where);
      continue;
    }
    const d = step.op === 'hit' ? await HITS[via](limiter, step.key, step.cost)
      : step.op === 'refund' ? await limiter.refund(step.key, { cost: step.cost })
        : await limiter.peek(step.key, { cost: step.cost });
    assert.deepEqual(d, expected(step.expect), where);
  }
}

test('the vectors cover every algorithm', () => {
  const seen = new Set(vectors.cases.map((c) => c.algorithm));
  assert.deepEqual([...seen].sort(), native.algorithms().sort());
});

for (const via of Object.keys(HITS)) {
  describe(`conformance on the memory store, through ${via}`, () => {
    for (const [index, c] of vectors.cases.entries()) {
      test(c.name, () => runCase(c, `conformance${index}`, 'memory://', via));
    }
  });
}

describe('conformance on Redis', () => {
  const redis = new RedisServer();
  before(() => redis.start());
  after(() => redis.close());
  for (const [index, c] of vectors.cases.entries()) test(c.name, () => runCase(c, `conformance${index}`, redis.url));
});

describe('conformance on PostgreSQL', () => {
  const postgres = new PostgresServer();
  before(() => postgres.start());
  after(() => postgres.close());
  for (const [index, c] of vectors.cases.entries()) {
    test(c.name, () => runCase(c, `conformance${index}`, `${postgres.url}?timeout=5s`));
  }
});
