'use strict';
// The memory store's three ways of hitting — the awaited hit, hitSync and allowSync — decide alike: seeded random
// traffic goes through all three side by side (one store each, one TestClock), for every algorithm, and every denial
// is checked for retry_after's precision on all three: one microsecond before now + retryAfterUs is still refused,
// now + retryAfterUs is allowed.

const { describe, test } = require('node:test');
const assert = require('node:assert/strict');

const { Limiter, Store, TestClock } = require('ratewarden');

const STEPS = 2000;
const KEYS = ['a', 'b', 'c'];
const T0 = 1_702_080_000_000_000;

// The rates of the core's property tests (tests/core/algorithms_test.cpp): every algorithm, and options that
// stress the arithmetic.
const CASES = [
  { policy: '10/s', algorithm: 'fixed_window' },
  { policy: '10/s', algorithm: 'sliding_log' },
  { policy: '10/s', algorithm: 'sliding_window' },
  { policy: '17/7s', algorithm: 'sliding_window', buckets: 1 },
  { policy: '100/1s', algorithm: 'sliding_window', buckets: 7 },
  { policy: '10/s', algorithm: 'token_bucket' },
  { policy: '7/minute', algorithm: 'token_bucket', burst: 3 },
  { policy: '10/s', algorithm: 'gcra' },
  { policy: '7/minute', algorithm: 'gcra', burst: 3 },
  { policy: '10/s', algorithm: 'gcra', burst: 25 },
];

// A small seeded generator (mulberry32): the same traffic on every run.
function random(seed) {
  let s = seed >>> 0;
  return (n) => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = Math.imul(s ^ (s >>> 15), 1 | s);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return Math.floor((((t ^ (t >>> 14)) >>> 0) / 4294967296) * n);
  };
}

describe('hit, hitSync and allowSync decide alike, to the microsecond', () => {
  for (const c of CASES) {
    test(`${c.algorithm} ${c.policy}${c.burst ? ` burst ${c.burst}` : ''}${c.buckets ? ` buckets ${c.buckets}` : ''}`, async () => {
      const clock = new TestClock(T0);
      const make = () => new Limiter({ ...c, store: new Store('memory://', { testClock: clock }) });
      const [viaHit, viaHitSync, viaAllowSync] = [make(), make(), make()];
      const { periodMs, capacity } = viaHit.policies[0];
      const next = random(7);
      // One hit through each path; they must agree. Returns the decision.
      const hitAll = async (key, cost, where) => {
        const options = cost === 1 ? undefined : { cost };
        const d = await viaHit.hit(key, options);
        assert.deepEqual(viaHitSync.hitSync(key, options), d, where);
        assert.equal(viaAllowSync.allowSync(key, options), d.allowed, where);
        return d;
      };
      let denials = 0;
      for (let i = 0; i < STEPS; i++) {
        clock.nowUs += next(periodMs * 250);  // up to a quarter of the period, in µs
        const key = KEYS[next(KEYS.length)];
        const cost = 1 + next(capacity);
        const where = `step ${i}: ${key} cost ${cost} at +${clock.nowUs - T0} µs`;
        const d = await hitAll(key, cost, where);
        if (d.allowed) {
          assert.equal(d.retryAfterUs, 0, where);
          continue;
        }
        denials++;
        assert.ok(d.retryAfterUs > 0, where);
        assert.equal(d.retryAfterMs, Math.ceil(d.retryAfterUs / 1000), where);
        const retryAt = clock.nowUs + d.retryAfterUs;
        clock.nowUs = retryAt - 1;
        assert.equal((await hitAll(key, cost, `${where}, retried 1 µs early`)).allowed, false, where);
        clock.nowUs = retryAt;
        assert.equal((await hitAll(key, cost, `${where}, retried on time`)).allowed, true, where);
      }
      assert.ok(denials > STEPS / 20, `only ${denials} denials: the traffic does not test the limit`);
    });
  }
});

// The bench's floor (bench/node/in_process.js): native.coreHits is the core's hit in a loop, so it charges as a hit
// does, each key under its own limit, and refuses bad input as the Limiter does.
test('coreHits, the bench floor, charges as hits do', () => {
  const native = require('../../node/lib/native');
  assert.equal(native.coreHits('3/hour', ['k'], 5), 3);
  assert.equal(native.coreHits('3/hour', ['a', 'b'], 10), 6);
  assert.equal(native.coreHits('1000/hour', ['a', 'b'], 10), 10);
  assert.throws(() => native.coreHits('3/hour', [], 1), { code: 'ERR_RATEWARDEN_INVALID_ARGUMENT' });
  assert.throws(() => native.coreHits('3/fortnight', ['k'], 1), { code: 'ERR_RATEWARDEN_INVALID_ARGUMENT' });
});
