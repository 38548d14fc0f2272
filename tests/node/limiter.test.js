'use strict';
// The Limiter API on the memory store and on a real redis-server: results, keys, batches, failures, bad input.

const { after, before, describe, test } = require('node:test');
const assert = require('node:assert/strict');

const { Limiter, Store, TestClock, codes } = require('ratewarden');
const { RedisServer } = require('./helpers/redis_server');

const INVALID = { code: codes.INVALID_ARGUMENT };

describe('memory store', () => {
  test('hit, peek, reset and hitSync agree, and a denial resolves', async () => {
    const limiter = new Limiter({ policy: '3/minute' });
    assert.equal(limiter.store.inMemory, true);
    assert.deepEqual(
      { ...(await limiter.hit('alice')), resetAfterMs: 0, resetAfterUs: 0 },
      { allowed: true, limit: 3, remaining: 2, resetAfterMs: 0, retryAfterMs: 0, used: 1, policyIndex: 0, resetAfterUs: 0, retryAfterUs: 0 },
    );
    assert.equal(limiter.hitSync('alice', { cost: 2 }).remaining, 0);
    const denied = await limiter.hit('alice');
    assert.equal(denied.allowed, false);
    assert.ok(denied.retryAfterMs > 59000 && denied.retryAfterMs <= 60000);
    assert.equal(denied.retryAfterMs, Math.ceil(denied.retryAfterUs / 1000));
    assert.equal((await limiter.peek('alice')).used, 3);
    await limiter.reset('alice');
    assert.equal((await limiter.peek('alice')).used, 0);
  });

  test('allowSync is a hit that answers whether it is allowed, with a boolean', () => {
    const limiter = new Limiter({ policy: '3/minute' });
    assert.equal(limiter.allowSync('alice'), true);
    assert.equal(limiter.allowSync('alice', { cost: 2 }), true);
    assert.equal(limiter.allowSync('alice'), false);
    assert.equal(limiter.hitSync('alice').used, 3);  // the denial consumed nothing
    assert.equal(limiter.allowSync(Buffer.from('bob')), true);
    assert.equal(limiter.hitSync('bob').remaining, 1);  // a Buffer and the same string are one key
    assert.equal(limiter.allowSync('\u00e9'), true);
    assert.equal(limiter.hitSync(Buffer.from('\u00e9', 'utf8')).remaining, 1);
  });

  test('store.stats(): states held, the bound, and the live states evicted to keep it', () => {
    const store = new Store('memory://?max_keys=100');
    assert.deepEqual(store.stats(), {
      name: 'memory://?max_keys=100&shards=1', network: false, hybrid: false,
      keys: 0, maxKeys: 100, evictions: 0, expiredDrops: 0,
      // the hybrid modes' counters (docs/hybrid.md): zeros for every other store
      localDenials: 0, localAllows: 0, storeCalls: 0, syncBatches: 0, syncLagMs: -1, invalidations: 0,
      // a network store's: zeros for the memory store (its calls are not counted there: the limiters' are)
      calls: { ok: 0, timeout: 0, unavailable: 0, error: 0 }, circuitsOpen: 0, circuitOpenings: 0,
      connectionsOpen: 0, poolSize: 0, sweeps: 0,
    });
    const limiter = new Limiter({ policy: '1/hour', store });
    for (let i = 0; i < 1000; i++) limiter.allowSync(`k${i}`);
    const { keys, maxKeys, evictions } = store.stats();
    assert.equal(maxKeys, 100);
    assert.ok(keys <= 100 && keys > 0, `${keys} keys held`);
    assert.equal(keys + evictions, 1000);  // none expired: every state is held or was evicted
  });

  test('a Buffer key and the same string share one state; binary keys with NUL work', async () => {
    const limiter = new Limiter({ policy: '2/minute' });
    await limiter.hit('alice');
    assert.equal((await limiter.hit(Buffer.from('alice'))).remaining, 0);
    const binary = Buffer.from([0, 255, 0, 1]);
    assert.equal(limiter.hitSync(binary).remaining, 1);
    assert.equal(limiter.hitSync(new Uint8Array([0, 255, 0, 1])).remaining, 0);
    assert.equal(limiter.hitSync('\u00e9').remaining, 1);
  });

  test('a string key is its UTF-8 bytes, a lone surrogate as U+FFFD (as Buffer.from does)', () => {
    const limiter = new Limiter({ policy: '2/minute' });
    for (const key of ['caf\u00e9', '\u65e5\u672c', '\u{1F600}', '\ud800x', 'a\udc00', '\u0000b', 'x'.repeat(4096)]) {
      limiter.hitSync(key);
      assert.equal(limiter.hitSync(Buffer.from(key, 'utf8')).remaining, 0, JSON.stringify(key));
    }
    assert.throws(() => limiter.hitSync('\u00e9'.repeat(2049)), /4098 bytes/);
  });

  test('hitMany decides each key, and an invalid key charges nothing', async () => {
    const limiter = new Limiter({ policy: '1/minute' });
    const [a, b, again] = await limiter.hitMany(['a', 'b', 'a']);
    assert.deepEqual([a.allowed, b.allowed, again.allowed], [true, true, false]);
    await assert.rejects(limiter.hitMany(['c', '']), INVALID);
    assert.equal((await limiter.peek('c')).used, 0);
  });

  test('several rates: all must allow, the lowest remaining is reported', async () => {
    const limiter = new Limiter({ policy: '2/second; 5/minute' });
    assert.deepEqual(limiter.policies.map((p) => [p.algorithm, p.limit, p.periodMs, p.capacity]), [
      ['fixed_window', 2, 1000, 2],
      ['fixed_window', 5, 60000, 5],
    ]);
    assert.deepEqual([(await limiter.hit('k')).limit, (await limiter.hit('k')).remaining], [2, 0]);
    assert.equal((await limiter.hit('k')).allowed, false);
    assert.deepEqual([(await limiter.peek('other')).limit, (await limiter.peek('other')).remaining], [2, 2]);
  });

  test('algorithm and burst reach the core', () => {
    const limiter = new Limiter({ policy: '10/second', algorithm: 'gcra', burst: 3 });
    assert.deepEqual([1, 2, 3, 4].map(() => limiter.hitSync('k').allowed), [true, true, true, false]);
    assert.equal(limiter.policies[0].capacity, 3);
  });

  test('limiters on one Store share state; a memory:// URL gives each limiter its own', () => {
    const store = new Store('memory://');
    const a = new Limiter({ policy: '2/minute', store });
    const b = new Limiter({ policy: '2/minute', store });
    a.hitSync('k');
    assert.equal(b.hitSync('k').remaining, 0);
    const c = new Limiter({ policy: '2/minute', store: 'memory://' });
    const d = new Limiter({ policy: '2/minute', store: 'memory://' });
    assert.notEqual(c.store, d.store);
    assert.equal(c.hitSync('k').remaining, 1);
    assert.equal(d.hitSync('k').remaining, 1);
    assert.match(store.describe(), /^memory:\/\//);
    assert.deepEqual([store.inMemory, store.shared], [true, false]);
  });

  test('a decision names the rate it reports (policyIndex)', () => {
    const clock = new TestClock(1_702_080_000_000_000);
    const limiter = new Limiter({
      policy: '10/second; 10 per 2 seconds', store: new Store('memory://', { testClock: clock }),
    });
    assert.deepEqual([1, 2, 3, 4, 5].map(() => limiter.hitSync('k').policyIndex), [0, 0, 0, 0, 0]);  // a tie: the first
    clock.nowUs += 1_500_000;  // the 1-second window restarted (9 left), the 2-second one has 4 left
    const d = limiter.hitSync('k');
    assert.deepEqual([d.allowed, d.limit, d.remaining, d.policyIndex], [true, 10, 4, 1]);
  });

  test('a TestClock moves time for the store that reads it', () => {
    const clock = new TestClock(1_000_000);
    const limiter = new Limiter({ policy: '1/second', store: new Store('memory://', { testClock: clock }) });
    assert.equal(limiter.hitSync('k').allowed, true);
    const denied = limiter.hitSync('k');
    assert.equal(denied.retryAfterUs, 1_000_000);
    clock.nowUs += 999_999;
    assert.equal(limiter.hitSync('k').allowed, false);
    clock.nowUs += 1;
    assert.equal(limiter.hitSync('k').allowed, true);
  });
});

describe('bad input is an Error with a code, never a crash', () => {
  const limiter = new Limiter({ policy: '5/minute' });

  test('options', () => {
    const bad = [
      [undefined, /Limiter options must be an object/],
      [null, /Limiter options must be an object/],
      [{}, /policy must be a string/],
      [{ policy: 5 }, /policy must be a string/],
      [{ policy: '5/fortnight' }, /"5\/fortnight"/],
      [{ policy: '0/minute' }, /0\/minute|limit/],
      [{ policy: '5/minute', polcy: 1 }, /unknown Limiter option "polcy"/],
      [{ policy: '5/minute', algorithm: 'leaky' }, /algorithm must be one of/],
      [{ policy: '5/minute', burst: 1.5 }, /burst must be an integer/],
      [{ policy: '5/minute', burst: 3 }, /burst applies to token_bucket and gcra/],
      [{ policy: '5/minute', buckets: 1.5 }, /buckets must be an integer/],
      [{ policy: '5/minute', algorithm: 'sliding_window', buckets: 0 }, /buckets must be between 1 and 1000, got 0/],
      [{ policy: '5/minute', prefix: 'a{b' }, /prefix/],
      [{ policy: '5/minute', onStoreError: 'ignore' }, /onStoreError must be one of/],
      [{ policy: '5/minute', store: 42 }, /store must be a URL string/],
      [{ policy: '5/minute', store: 'ftp://x' }, /unsupported store URL/],
      [{ policy: '5/minute', store: 'redis://:secret@host:notaport' }, (e) => !e.message.includes('secret')],
    ];
    for (const [options, message] of bad) {
      assert.throws(() => new Limiter(options), (e) => {
        assert.ok(e instanceof Error);
        assert.equal(e.code, codes.INVALID_ARGUMENT, e.message);
        if (message instanceof RegExp) assert.match(e.message, message);
        else assert.ok(message(e), e.message);
        return true;
      }, JSON.stringify(options));
    }
    assert.throws(() => new Store('memory://', { testClock: {} }), INVALID);
    assert.throws(() => new TestClock(NaN), INVALID);
  });

  test('keys and costs', async () => {
    const badCalls = [
      [''], [42], [null], [undefined], [{}], ['x'.repeat(4097)], [Buffer.alloc(0)],
      ['k', { cost: NaN }], ['k', { cost: Infinity }], ['k', { cost: -1 }], ['k', { cost: 0 }], ['k', { cost: 1.5 }],
      ['k', { cost: '2' }], ['k', { cost: 6 }], ['k', { cost: 2 ** 60 }], ['k', 3], ['k', null],
    ];
    for (const args of badCalls) {
      await assert.rejects(limiter.hit(...args), INVALID, `hit(${args.map(String)})`);
      await assert.rejects(limiter.peek(...args), INVALID, `peek(${args.map(String)})`);
      assert.throws(() => limiter.hitSync(...args), INVALID, `hitSync(${args.map(String)})`);
      // allowSync fails as hitSync does: the same error, the same message.
      const thrown = (f) => {
        try {
          f();
        } catch (error) {
          return [error.constructor, error.code, error.message];
        }
        return undefined;
      };
      assert.deepEqual(thrown(() => limiter.allowSync(...args)), thrown(() => limiter.hitSync(...args)),
        `allowSync(${args.map(String)})`);
    }
    // A cost no int64 holds is refused as out of range; a larger integer than 2^53 is read exactly, so the core's
    // refusal names the number JS shows for it.
    const costs = [
      [1e20, /^cost is out of range \(it does not fit in 64 bits\), got 100000000000000000000$/],
      [-(2 ** 63), /^cost must be between 1 and 5 .*, got -9223372036854775808$/],
      [2 ** 60, /^cost must be between 1 and 5 .*, got 1152921504606846976$/],
      // A cost of another type says what it was (a cost read from a query string is a string).
      ['2', /^cost must be an integer, got "2"$/],
      [2n, /^cost must be an integer, got 2n$/],
      [null, /^cost must be an integer, got null$/],
      [true, /^cost must be an integer, got true$/],
      [{}, /^cost must be an integer, got \[object Object\]$/],
      [Symbol('s'), /^cost must be an integer, got a symbol$/],
      [1.5, /^cost must be an integer, got 1.5$/],
    ];
    for (const [cost, message] of costs) {
      assert.throws(() => limiter.hitSync('k', { cost }), { code: codes.INVALID_ARGUMENT, message }, String(cost));
      await assert.rejects(limiter.hit('k', { cost }), { code: codes.INVALID_ARGUMENT, message }, String(cost));
    }
    await assert.rejects(limiter.reset(''), INVALID);
    await assert.rejects(limiter.hitMany('abc'), INVALID);
    await assert.rejects(limiter.hitMany([1]), INVALID);
    assert.equal((await limiter.peek('k')).used, 0);
  });

  test('an invalid-argument error points at the caller', async () => {
    const error = await limiter.hit('').catch((e) => e);
    assert.match(error.stack.split('\n')[1], /limiter\.test\.js/);
    for (const method of ['hitSync', 'allowSync']) {
      assert.throws(() => limiter[method](''), (e) => /limiter\.test\.js/.test(e.stack.split('\n')[1]), method);
    }
  });
});

describe('Redis store', () => {
  const redis = new RedisServer();
  let limiter;
  before(async () => {
    await redis.start();
    limiter = new Limiter({ policy: '100/minute', store: redis.url });
  });
  after(() => redis.close());

  test('hit, peek, reset and hitMany, with the documented storage key', async () => {
    assert.equal((await limiter.hit('alice', { cost: 3 })).remaining, 97);
    assert.equal(await redis.command('EXISTS', 'rw:{alice}:v3:fixed_window:100:60000'), '1');
    assert.equal((await limiter.peek('alice')).used, 3);
    const many = await limiter.hitMany(['alice', 'bob']);
    assert.deepEqual(many.map((d) => d.used), [4, 1]);
    assert.deepEqual(many.map((d) => d.policyIndex), [0, 0]);
    await limiter.reset('alice');
    assert.equal(await redis.command('EXISTS', 'rw:{alice}:v3:fixed_window:100:60000'), '0');
    assert.throws(() => limiter.hitSync('alice'), INVALID);
    assert.throws(() => limiter.allowSync('alice'), { ...INVALID, message: /allowSync works on the memory store only/ });
    const { calls, connectionsOpen, ...stats } = limiter.store.stats();
    assert.deepEqual(stats, {
      name: limiter.store.describe(), network: true, hybrid: false, keys: 0, maxKeys: 0, evictions: 0, expiredDrops: 0,
      localDenials: 0, localAllows: 0, storeCalls: 0, syncBatches: 0, syncLagMs: -1, invalidations: 0,
      circuitsOpen: 0, circuitOpenings: 0, poolSize: 0, sweeps: 0,
    });
    // The calls of every limiter on this URL's store (one per URL in the process), each answered.
    assert.ok(calls.ok >= 1 && calls.timeout + calls.unavailable + calls.error === 0, JSON.stringify(calls));
    assert.ok(connectionsOpen >= 1, `${connectionsOpen}`);
  });

  test('limiters given the same URL string share one store', async () => {
    const other = new Limiter({ policy: '5/minute', store: redis.url });
    assert.deepEqual([other.store.inMemory, other.store.shared], [false, true]);
    // A hybrid store counts the calls it sends to Redis: another limiter's store sees this one's calls only if it is
    // the same core store (one connection pool), not another opened on the same URL.
    const url = `${redis.url}?mode=local_first&prefix=one-store`;
    const a = new Limiter({ policy: '5/minute', store: url });
    const b = new Limiter({ policy: '5/minute', store: url });
    await a.hit('k');
    assert.equal(b.store.stats().storeCalls, 1);
    assert.equal(new Store(url).stats().storeCalls, 0);
  });

  test('many hits in flight on one key: exactly the limit is allowed', async () => {
    const results = await Promise.all(Array.from({ length: 500 }, () => limiter.hit('crowd')));
    assert.equal(results.filter((d) => d.allowed).length, 100);
  });

  test('a bad call in a batch fails alone', async () => {
    const results = await Promise.allSettled([limiter.hit('ok1'), limiter.hit(''), limiter.hit('ok2', { cost: 101 }), limiter.hit('ok3')]);
    assert.deepEqual(results.map((r) => r.status), ['fulfilled', 'rejected', 'rejected', 'fulfilled']);
    assert.equal(results[2].reason.code, codes.INVALID_ARGUMENT);
  });

  test('a store that is down: errors with a code, pointing at the caller; fail open and closed', async () => {
    const down = 'redis://127.0.0.1:1?connect_timeout=200ms';
    const raise = new Limiter({ policy: '5/minute', store: down });
    for (const call of [() => raise.hit('k'), () => raise.peek('k'), () => raise.reset('k'), () => raise.hitMany(['k'])]) {
      const error = await call().catch((e) => e);
      assert.ok(error instanceof Error);
      assert.equal(error.code, codes.STORE_UNAVAILABLE);
      assert.doesNotMatch(error.message, /secret/);
      assert.match(error.stack, /limiter\.test\.js/);
    }
    const open = new Limiter({ policy: '5/minute', store: down, onStoreError: 'allow' });
    assert.deepEqual(await open.hit('k'), { allowed: true, limit: 5, remaining: 5, resetAfterMs: 0, retryAfterMs: 0, used: 0, policyIndex: 0, resetAfterUs: 0, retryAfterUs: 0 });
    const closed = new Limiter({ policy: '5/minute', store: down, onStoreError: 'deny' });
    const denied = await closed.hit('k');
    assert.equal(denied.allowed, false);
    assert.equal(denied.retryAfterMs, 1000);
  });

  test('a store timeout is ERR_RATEWARDEN_STORE_TIMEOUT', async () => {
    const slow = new Limiter({ policy: '5/minute', store: `${redis.url}?timeout=100ms` });
    const sleeping = redis.command('DEBUG', 'SLEEP', '1');
    await new Promise((resolve) => setTimeout(resolve, 200));
    await assert.rejects(slow.hit('k'), { code: codes.STORE_TIMEOUT });
    await sleeping;
  });
});

// Every code the package throws (or hands to onKeyError) is in `codes`, in index.d.ts's ErrorCode and in
// docs/node.md's table of errors; and nothing else is.
test('codes, the declarations and the docs name the codes the package uses', () => {
  const fs = require('node:fs');
  const path = require('node:path');
  const root = path.join(__dirname, '..', '..');
  const found = (text) => new Set(text.match(/ERR_RATEWARDEN_[A-Z_]+/g));
  const used = new Set();
  for (const dir of ['node/lib', 'node/src']) {
    for (const file of fs.readdirSync(path.join(root, dir))) {
      for (const code of found(fs.readFileSync(path.join(root, dir, file), 'utf8'))) used.add(code);
    }
  }
  const sorted = (set) => [...set].sort();
  assert.deepEqual(sorted(new Set(Object.values(codes))), sorted(used));
  for (const [name, code] of Object.entries(codes)) assert.equal(code, `ERR_RATEWARDEN_${name}`);
  const dts = fs.readFileSync(path.join(root, 'node', 'index.d.ts'), 'utf8');
  assert.deepEqual(sorted(found(/export type ErrorCode =[^;]*;/.exec(dts)[0])), sorted(used));
  assert.deepEqual(sorted(found(/export declare const codes: \{[^}]*\}/.exec(dts)[0])), sorted(used));
  const docs = fs.readFileSync(path.join(root, 'docs', 'node.md'), 'utf8');
  const table = /^## Errors\n[\s\S]*?\n\n\|[\s\S]*?\n\n/m.exec(docs)[0];
  const documented = new Set([...table.matchAll(/^\| `(ERR_RATEWARDEN_[A-Z_]+)`/gm)].map((m) => m[1]));
  assert.deepEqual(sorted(documented), sorted(used));
});
