'use strict';
// The hybrid modes of a shared store from Node (?mode=local_first, ?mode=async; docs/hybrid.md), against a real
// redis-server: denials answered in-process, exact admission with many calls in flight, resets seen from other
// stores, leases, stats, bad URLs, and the event loop kept free.

const { after, before, describe, test } = require('node:test');
const assert = require('node:assert/strict');
const { setTimeout: sleep } = require('node:timers/promises');

const { Limiter, Store, codes } = require('ratewarden');
const { RedisServer } = require('./helpers/redis_server');

const EXACT_ALGORITHMS = ['fixed_window', 'sliding_window', 'sliding_log', 'token_bucket', 'gcra'];
// What is known is used only while the reset log was read less than 3 x sync ago: tests that count every local
// answer use a sync long enough that a loaded machine's scheduling never turns local answers off meanwhile.
const STEADY = '?mode=local_first&sync=100ms';
let names = 0;
const unique = (name) => `${name}-${process.pid}-${names++}`;

// A hybrid store whose local knowledge is in use: its first call started the background rounds, and the reset log
// has been read once (stats().syncLagMs >= 0).
async function warm(url) {
  const store = new Store(url);
  await new Limiter({ policy: '1/hour', store, prefix: 'warm' }).peek('warm-up');
  const deadline = Date.now() + 5000;
  while (store.stats().syncLagMs < 0) {
    assert.ok(Date.now() < deadline, 'the reset log was never read');
    await sleep(1);
  }
  return store;
}

describe('hybrid modes on Redis', () => {
  const redis = new RedisServer();
  before(() => redis.start());
  after(() => redis.close());

  test('local_first answers the denials the store proved, aged, with no round trip', async () => {
    const store = await warm(`${redis.url}${STEADY}`);
    const limiter = new Limiter({ policy: '3/minute', store, prefix: unique('proved') });
    for (let i = 0; i < 3; i++) assert.equal((await limiter.hit('k')).allowed, true);
    const before = store.stats();
    const sent = performance.now();
    const first = await limiter.hit('k'); // the store's denial: one round trip, which teaches it
    assert.equal(first.allowed, false);
    assert.equal(store.stats().storeCalls, before.storeCalls + 1);
    const denials = store.stats().localDenials;

    const local = await Promise.all([
      ...Array.from({ length: 300 }, () => limiter.hit('k')),
      ...Array.from({ length: 50 }, () => limiter.peek('k')),
    ]);
    const elapsedUs = (performance.now() - sent) * 1000;
    const after = store.stats();
    assert.equal(after.localDenials, denials + 350);
    assert.equal(after.storeCalls, before.storeCalls + 1);
    for (const d of local) {
      assert.equal(d.allowed, false);
      // The store's answer aged by the time since: never earlier than the store implied, never later either.
      assert.ok(d.retryAfterUs <= first.retryAfterUs && d.retryAfterUs >= first.retryAfterUs - elapsedUs - 2000,
        `${d.retryAfterUs} against ${first.retryAfterUs}`);
      assert.deepEqual([d.limit, d.remaining, d.used], [first.limit, first.remaining, first.used]);
    }
  });

  test('local_first sends a smaller cost to the store', async () => {
    const store = await warm(`${redis.url}${STEADY}`);
    const limiter = new Limiter({ policy: '10/minute', store, prefix: unique('cost') });
    assert.equal((await limiter.hit('k', { cost: 8 })).remaining, 2);
    assert.equal((await limiter.hit('k', { cost: 5 })).allowed, false);
    const calls = store.stats().storeCalls;
    assert.equal((await limiter.hit('k', { cost: 9 })).allowed, false);
    assert.equal(store.stats().storeCalls, calls); // proved by the denial of 5
    assert.equal((await limiter.hit('k', { cost: 1 })).remaining, 1); // might be admitted: asked, and it is
    assert.equal(store.stats().storeCalls, calls + 1);
  });

  for (const algorithm of EXACT_ALGORITHMS) {
    test(`local_first admits exactly the limit with 800 calls in flight (${algorithm})`, async () => {
      const store = await warm(`${redis.url}?mode=local_first`);
      const limiter = new Limiter({ policy: '100/day', store, algorithm, prefix: unique('flight') });
      // 8 waves of 100 in flight: the later waves find the store's denial known.
      let allowed = 0;
      for (let wave = 0; wave < 8; wave++) {
        const decisions = await Promise.all(Array.from({ length: 100 }, () => limiter.hit('shared')));
        allowed += decisions.filter((d) => d.allowed).length;
      }
      assert.equal(allowed, 100);
      const s = store.stats();
      assert.ok(s.localDenials > 0, JSON.stringify(s));
      assert.ok(s.storeCalls + s.localDenials >= 800);
    });
  }

  test('a reset from an exact-mode store is seen promptly', async () => {
    const store = await warm(`${redis.url}?mode=local_first&sync=10ms`);
    const prefix = unique('reset');
    const limiter = new Limiter({ policy: '2/hour', store, prefix });
    const exact = new Limiter({ policy: '2/hour', store: new Store(redis.url), prefix }); // another store, exact
    for (let i = 0; i < 3; i++) await limiter.hit('k');
    const denials = store.stats().localDenials;
    assert.equal((await limiter.peek('k')).allowed, false);
    assert.equal(store.stats().localDenials, denials + 1); // known to be denied
    const dropped = store.stats().invalidations;

    await exact.reset('k');
    const resetAt = performance.now();
    while (!(await limiter.peek('k')).allowed) {
      assert.ok(performance.now() - resetAt < 1000, 'the reset was not seen within a second');
      await sleep(0);
    }
    const seenAfterMs = performance.now() - resetAt;
    // Within sync (10 ms) plus a round trip by design; 3 x sync + scheduling noise of a loaded machine here.
    assert.ok(seenAfterMs < 250, `the reset was seen after ${seenAfterMs.toFixed(1)} ms`);
    assert.ok(store.stats().invalidations > dropped);
    assert.equal((await limiter.hit('k')).remaining, 1);
  });

  test('its own reset is seen at once', async () => {
    const store = await warm(`${redis.url}?mode=local_first&sync=1s`); // the log is not read again meanwhile
    const limiter = new Limiter({ policy: '1/hour', store, prefix: unique('own-reset') });
    await limiter.hit('k');
    assert.equal((await limiter.hit('k')).allowed, false);
    assert.equal((await limiter.hit('k')).allowed, false);
    await limiter.reset('k');
    assert.equal((await limiter.hit('k')).allowed, true);
  });

  test('async leases admit locally, charged to the store first', async () => {
    const store = await warm(`${redis.url}?mode=async&sync=20ms`);
    const prefix = unique('lease');
    const limiter = new Limiter({ policy: '100000000/hour', store, prefix });
    let allowed = 0;
    const deadline = performance.now() + 300;
    while (performance.now() < deadline) {
      const decisions = await Promise.all(Array.from({ length: 100 }, () => limiter.hit('hot')));
      allowed += decisions.filter((d) => d.allowed).length;
    }
    const s = store.stats();
    assert.ok(s.localAllows > allowed * 0.9, JSON.stringify(s));
    assert.ok(s.syncBatches > 0);
    const exact = new Limiter({ policy: '100000000/hour', store: new Store(redis.url), prefix });
    assert.ok((await exact.peek('hot')).used >= allowed);
  });

  test('async never admits more than a fixed window, within the lease bound below', async () => {
    const store = await warm(`${redis.url}?mode=async&sync=20ms`);
    const limiter = new Limiter({ policy: '5000/day', store, prefix: unique('async-window') });
    let allowed = 0;
    const deadline = performance.now() + 1000;
    while (performance.now() < deadline) {
      const decisions = await Promise.all(Array.from({ length: 100 }, () => limiter.hit('shared')));
      allowed += decisions.filter((d) => d.allowed).length;
    }
    const c = 50; // a lease: 1% of 5000
    assert.ok(allowed <= 5000 && allowed >= 5000 - 2 * c, `${allowed} admitted`); // docs/hybrid.md, P = 1
    assert.ok(store.stats().localAllows > 0); // the leases were used (sync=20ms: many rounds before the 5000 go)
  });

  test('async leases do not pile up for a steady user: the store is charged at most what is admitted plus 2c', async () => {
    const store = await warm(`${redis.url}?mode=async&sync=10ms`);
    const prefix = unique('steady');
    const limiter = new Limiter({ policy: '10000/hour', store, prefix });
    const exact = new Limiter({ policy: '10000/hour', store: new Store(redis.url), prefix });
    const c = 100; // 1% of 10000: a process holds at most 2c (docs/hybrid.md)
    let admitted = 0;
    const start = performance.now();
    for (let i = 0; i < 1000; i++) { // one hit a ms, 10 a round
      while (performance.now() < start + i) await sleep(0);
      if ((await limiter.hit('steady')).allowed) admitted++;
      if (i % 250 === 249) {
        const charged = (await exact.peek('steady')).used;
        assert.ok(admitted <= charged && charged < admitted + 2 * c, `${i}: admitted ${admitted}, charged ${charged}`);
      }
    }
    assert.equal(admitted, 1000);
    assert.ok(store.stats().localAllows > 0);
  });

  test('stats: the hybrid counters exist, with the right types', async () => {
    const fresh = new Store(`${redis.url}?mode=local_first&local_keys=500`);
    const s0 = fresh.stats();
    // -1 until the reset log has been read once (the first read may already be under way: stats() starts it)
    assert.ok(s0.syncLagMs === -1 || s0.syncLagMs >= 0, `${s0.syncLagMs}`);
    assert.deepEqual([s0.maxKeys, s0.localDenials, s0.storeCalls], [500, 0, 0]);

    const store = await warm(`${redis.url}?mode=local_first&sync=10ms`);
    const s = store.stats();
    const counters = ['keys', 'maxKeys', 'evictions', 'expiredDrops', 'localDenials', 'localAllows', 'storeCalls',
      'syncBatches', 'invalidations', 'circuitsOpen', 'circuitOpenings', 'connectionsOpen', 'poolSize', 'sweeps'];
    assert.deepEqual(Object.keys(s).sort(), [...counters, 'syncLagMs', 'name', 'network', 'hybrid', 'calls'].sort());
    assert.deepEqual([s.network, s.hybrid, s.name], [true, true, store.describe()]);
    assert.ok(s.calls.ok >= 1, JSON.stringify(s.calls));  // the shared store's calls
    for (const name of counters) assert.ok(Number.isInteger(s[name]) && s[name] >= 0, name);
    assert.ok(typeof s.syncLagMs === 'number' && s.syncLagMs >= 0 && s.syncLagMs < 1000);
    assert.ok(s.syncBatches >= 1 && s.storeCalls >= 1);
    await sleep(100);
    const later = store.stats();
    assert.ok(later.syncBatches > s.syncBatches); // the rounds go on in the background
    assert.ok(later.syncLagMs < 500); // ...and read the log every sync (10 ms; a loaded machine may lag)

    for (const other of [new Store('memory://'), new Store(redis.url)]) {
      const o = other.stats();
      assert.deepEqual([o.localDenials, o.localAllows, o.storeCalls, o.syncBatches, o.invalidations], [0, 0, 0, 0, 0]);
    }
  });

  test('local knowledge is bounded', async () => {
    const store = await warm(`${redis.url}${STEADY}&local_keys=64`);
    const limiter = new Limiter({ policy: '1/hour', store, prefix: unique('bound') });
    const keys = Array.from({ length: 1000 }, (_, i) => `k${i}`);
    assert.ok((await limiter.hitMany(keys)).every((d) => d.allowed));
    const denied = await Promise.all(keys.map((k) => limiter.hit(k))); // a flood of distinct denied keys
    assert.ok(denied.every((d) => !d.allowed));
    const s = store.stats();
    assert.ok(s.keys > 0 && s.keys <= 64, `${s.keys} entries`);
    assert.ok(s.evictions > 0);
  });

  test('bad mode URLs are errors with the invalid-argument code and a clear message', () => {
    const bad = [
      ['?mode=fast', /mode must be exact, local_first or async, got "fast"/],
      ['?mode=', /mode must be exact, local_first or async/],
      ['?mode=local_first&lease=1', /lease= applies to \?mode=async/],
      ['?mode=async&lease=0', /lease must be a percentage in \(0, 100\]/],
      ['?mode=async&lease=abc', /lease must be a percentage in \(0, 100\]/],
      ['?mode=async&sync=0ms', /sync/],
      ['?mode=local_first&sync=soon', /sync/],
      ['?mode=local_first&local_keys=0', /local_keys/],
      ['?sync=10ms', /sync= applies to \?mode=local_first or \?mode=async/],
    ];
    for (const [query, message] of bad) {
      const url = `redis://user:s3cret@127.0.0.1:${redis.port}${query}`;
      for (const open of [() => new Store(url), () => new Limiter({ policy: '1/minute', store: url })]) {
        assert.throws(open, (e) => {
          assert.ok(e instanceof Error);
          assert.equal(e.code, codes.INVALID_ARGUMENT, e.message);
          assert.match(e.message, message);
          assert.ok(!e.message.includes('s3cret'), e.message);
          return true;
        }, query);
      }
    }
    for (const mode of ['local_first', 'async']) {
      assert.throws(() => new Store(`memory://?mode=${mode}`), { code: codes.INVALID_ARGUMENT, message: /memory:\/\// });
    }
  });

  test('local denials resolve without blocking the event loop', async () => {
    const store = await warm(`${redis.url}${STEADY}`);
    const limiter = new Limiter({ policy: '5/minute', store, prefix: unique('loop') });
    for (let i = 0; i < 6; i++) await limiter.hit('k'); // one after another: the last answer is the denial
    let ticks = 0;
    const ticker = setInterval(() => ticks++, 0);
    const before = store.stats();
    let denied = 0;
    const deadline = performance.now() + 100;
    while (performance.now() < deadline) {
      const decisions = await Promise.all(Array.from({ length: 100 }, () => limiter.hit('k')));
      denied += decisions.filter((d) => !d.allowed).length;
      await new Promise(setImmediate);
    }
    clearInterval(ticker);
    const after = store.stats();
    assert.equal(after.localDenials - before.localDenials, denied);
    assert.equal(after.storeCalls, before.storeCalls);
    assert.ok(ticks > 0);
  });
});

describe('hybrid modes with a Redis that dies', () => {
  const redis = new RedisServer();
  before(() => redis.start());
  after(() => redis.close());

  test('local_first: local answers stop, onStoreError applies, nothing hangs; then exact, then local again', async () => {
    const store = await warm(`${redis.url}?mode=local_first&sync=10ms&timeout=200ms&connect_timeout=200ms`);
    const prefix = unique('dies');
    const raising = new Limiter({ policy: '1/hour', store, prefix });
    const open = new Limiter({ policy: '1/hour', store, prefix, onStoreError: 'allow' });
    const closed = new Limiter({ policy: '1/hour', store, prefix, onStoreError: 'deny' });
    await raising.hit('k');
    assert.equal((await raising.hit('k')).allowed, false);
    const denials = store.stats().localDenials;
    assert.equal((await raising.hit('k')).allowed, false);
    assert.equal(store.stats().localDenials, denials + 1);

    await redis.kill();
    let deadline = performance.now() + 5000;
    for (;;) {
      const started = performance.now();
      const error = await raising.hit('k').then(() => null, (e) => e);
      assert.ok(performance.now() - started < 2000, 'a call hung on a dead store');
      if (error) {
        assert.ok([codes.STORE_UNAVAILABLE, codes.STORE_TIMEOUT, codes.STORE].includes(error.code), error.code);
        break;
      }
      assert.ok(performance.now() < deadline, 'local answers went on with the store dead');
      await sleep(10);
    }
    assert.equal((await open.hit('k')).allowed, true);
    assert.equal((await closed.hit('k')).allowed, false);

    await redis.start(); // same port, empty: k's state is gone, and exact would admit it
    deadline = performance.now() + 10000;
    while (!(await raising.hit('k').then((d) => d.allowed, () => false))) {
      assert.ok(performance.now() < deadline, 'the store never came back, or k is still denied from what it forgot');
      await sleep(50);
    }
    assert.equal((await raising.hit('k')).allowed, false);
    const before = store.stats().localDenials;
    deadline = performance.now() + 5000;
    while (store.stats().localDenials === before) {
      assert.equal((await raising.hit('k')).allowed, false);
      assert.ok(performance.now() < deadline, 'local answers never resumed');
      await sleep(1);
    }
  });
});
