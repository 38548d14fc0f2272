'use strict';
// Pacing (docs/pacing.md): acquire and wrap wait for the slot a reservation charged, on the memory store, one Redis
// and a Redis Cluster alike. A wait never ends early, a timeout rejects at once without charging, and an aborted
// wait gives its slot back unless a later reservation was charged on the key meanwhile.

const { after, before, describe, test } = require('node:test');
const assert = require('node:assert/strict');
const { execFileSync } = require('node:child_process');
const { getEventListeners } = require('node:events');
const { randomBytes } = require('node:crypto');

const { Limiter, RateLimitTimeoutError, codes } = require('ratewarden');
const { RedisCluster, RedisServer } = require('./helpers/redis_server');

const EARLY_MS = 3; // the store's clock (Redis TIME) against performance.now(): a wait may look this much early
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

const redis = new RedisServer();
const cluster = new RedisCluster();
before(() => Promise.all([redis.start(), cluster.start()]));
after(() => Promise.all([redis.close(), cluster.close()]));

// A new reservation's slot in ms after the first acquire returned (when slot 0 had come, give or take the answer's
// latency): about 200 when slot 1 (of a 5/second key) was given back, 400 when it stayed spent.
async function nextSlotAfterTheFirst(limiter, firstReturned) {
  const { waitUs } = await limiter.reserve('k');
  return waitUs / 1000 + (performance.now() - firstReturned);
}

// A limiter of its own (a fresh prefix): one slot every period/limit, `burst` at once.
function paced(store, policy = '5/second', burst = 1, algorithm = 'gcra') {
  return new Limiter({ policy, store, algorithm, burst, prefix: `pace-${randomBytes(4).toString('hex')}` });
}

const STORES = {
  memory: () => 'memory://',
  redis: () => redis.url,
  cluster: () => cluster.url,
};

for (const [name, url] of Object.entries(STORES)) {
  describe(`pacing on ${name}`, () => {
    for (const algorithm of ['gcra', 'token_bucket']) {
      test(`${algorithm}: acquire waits for its slot`, async () => {
        const limiter = paced(url(), '20/second', 1, algorithm); // a slot every 50 ms
        const start = performance.now();
        const waits = [];
        for (let i = 0; i < 3; i++) waits.push((await limiter.acquire('k')).waitUs);
        assert.equal(waits[0], 0);
        // At most a period: less when a round trip took some of it, more by as much as the previous timer fired early.
        assert.ok(waits.every((w) => w <= 50000 + EARLY_MS * 1000), String(waits));
        assert.ok(performance.now() - start >= 100 - EARLY_MS); // the third slot: two periods after the first
      });
    }

    test('concurrent callers get one slot each, never early', async () => {
      const limiter = paced(url(), '50/second'); // a slot every 20 ms
      const start = performance.now();
      const returned = await Promise.all(Array.from({ length: 10 }, () =>
        limiter.acquire('k').then(() => performance.now() - start)));
      returned.sort((a, b) => a - b).forEach((at, k) => assert.ok(at >= k * 20 - EARLY_MS, `${k}: ${at}`));
      assert.ok(returned[9] < 9 * 20 + 1000);
    });

    test('a wait longer than timeoutMs rejects at once and charges nothing', async () => {
      const limiter = paced(url(), '1/second'); // a slot every second
      assert.equal((await limiter.acquire('k', { timeoutMs: 0 })).waitUs, 0);
      const before = await limiter.peek('k');
      const start = performance.now();
      const error = await limiter.acquire('k', { timeoutMs: 600 }).then(() => null, (e) => e);
      assert.ok(performance.now() - start < 400); // at once, not after the timeout (600 ms) or the wait (1 s)
      assert.ok(error instanceof RateLimitTimeoutError && error instanceof Error);
      assert.equal(error.code, codes.RATE_LIMIT_TIMEOUT);
      assert.equal(error.name, 'RateLimitTimeoutError');
      assert.equal(error.timeoutMs, 600);
      assert.equal(error.decision.allowed, false);
      assert.ok(error.decision.retryAfterMs > 600 && error.decision.retryAfterMs <= 1000);
      assert.match(error.message, /"k" would take \d+ ms, more than the timeout of 600 ms/);
      const afterwards = await limiter.peek('k');
      assert.equal(afterwards.remaining, before.remaining);
      assert.ok(afterwards.retryAfterUs <= before.retryAfterUs);
      assert.equal((await limiter.reserve('k', { maxWaitMs: 1000 })).allowed, true); // the next slot, not one further
    });

    test('a maxWaitMs beyond what 64 bits of microseconds hold is no bound, as Infinity is', async () => {
      const limiter = paced(url(), '1/hour');
      for (const maxWaitMs of [2 ** 62 / 1000, 1e300, Number.MAX_VALUE, Infinity]) {
        const r = await limiter.reserve('k', { maxWaitMs });
        assert.equal(r.allowed, true, String(maxWaitMs));
      }
      // Four slots an hour apart were charged: the next is about four hours away (three, had one not been).
      assert.ok((await limiter.peek('k')).retryAfterMs > 3 * 3_600_000, 'every reservation was charged');
    });

    test('an abort while waiting rejects with its reason and gives the slot back', async () => {
      const limiter = paced(url(), '5/second'); // a slot every 200 ms
      await limiter.acquire('k');
      const firstReturned = performance.now();
      const controller = new AbortController();
      const waiting = limiter.acquire('k', { signal: controller.signal });
      await sleep(50);
      const start = performance.now();
      controller.abort();
      await assert.rejects(waiting, { name: 'AbortError' });
      assert.ok(performance.now() - start < 300);
      assert.ok(await nextSlotAfterTheFirst(limiter, firstReturned) < 300); // slot 1 again (200 ms), not slot 2
    });

    // An abort just before acquire reads the reservation's answer, or in the microtask just after it: either way the
    // call rejects (it resolved after the full wait when the abort came just after) and the slot goes back once.
    for (const [when, abortOn] of [['before', (abort) => abort()], ['after', (abort) => queueMicrotask(abort)]]) {
      test(`an abort ${when} acquire reads the reservation's answer rejects and gives the slot back once`, async () => {
        const limiter = paced(url(), '5/second');
        await limiter.acquire('k');
        const firstReturned = performance.now();
        const controller = new AbortController();
        const reason = new Error('gone');
        const reserve = limiter.reserve.bind(limiter);
        limiter.reserve = (...args) => {
          const reserving = reserve(...args);
          // This reaction was registered first: it runs before acquire's own, and abortOn's microtask after it.
          reserving.then(() => abortOn(() => controller.abort(reason)));
          return reserving;
        };
        const cancel = limiter.cancel.bind(limiter);
        let cancels = 0;
        limiter.cancel = (...args) => (cancels++, cancel(...args));
        await assert.rejects(limiter.acquire('k', { signal: controller.signal }), (e) => e === reason);
        delete limiter.reserve;
        const next = await nextSlotAfterTheFirst(limiter, firstReturned);
        assert.ok(next > 100 && next < 300, String(next)); // slot 1 again (200 ms): neither slot 2 nor slot 0
        assert.equal(cancels, 1);
      });
    }

    test('an abort reason is the rejection; AbortSignal.timeout works the same', async () => {
      const limiter = paced(url(), '5/second');
      await limiter.acquire('k');
      const firstReturned = performance.now();
      const controller = new AbortController();
      const reason = new Error('shutting down');
      const waiting = limiter.acquire('k', { signal: controller.signal });
      setTimeout(() => controller.abort(reason), 20);
      await assert.rejects(waiting, (e) => e === reason);
      await assert.rejects(limiter.acquire('k', { signal: AbortSignal.timeout(30) }), { name: 'TimeoutError' });
      assert.ok(await nextSlotAfterTheFirst(limiter, firstReturned) < 300);
    });

    test('a signal that is never aborted keeps no listener once the calls are done', async () => {
      const limiter = paced(url(), '50/second');
      const { signal } = new AbortController();
      const slow = limiter.wrap(async (n) => n, { key: 'k', signal });
      assert.deepEqual(await Promise.all([1, 2, 3, 4].map((n) => slow(n))), [1, 2, 3, 4]);
      assert.equal(getEventListeners(signal, 'abort').length, 0);
    });

    test('an aborted signal rejects at once and charges nothing', async () => {
      const limiter = paced(url(), '5/second', 2);
      const reason = new Error('already');
      await assert.rejects(limiter.acquire('k', { signal: AbortSignal.abort(reason) }), (e) => e === reason);
      assert.equal((await limiter.peek('k')).remaining, 2);
    });

    test('an aborted wait keeps its slot when a later one was charged', async () => {
      const limiter = paced(url(), '5/second');
      const start = performance.now();
      await limiter.acquire('k'); // slot 0
      const controller = new AbortController();
      const first = limiter.acquire('k', { signal: controller.signal }); // slot 1, 200 ms after slot 0
      await sleep(20);
      const second = limiter.acquire('k'); // slot 2, 400 ms
      await sleep(30);
      controller.abort();
      await assert.rejects(first, { name: 'AbortError' });
      // Giving slot 1 back would let a newcomer take it ahead of the second caller: it stays spent, and the next
      // reservation is slot 3, 600 ms after slot 0 (which was no earlier than start).
      const { waitUs } = await limiter.reserve('k');
      assert.ok(waitUs / 1000 + (performance.now() - start) >= 600 - EARLY_MS, String(waitUs));
      assert.equal((await second).allowed, true);
    });

    test('wrap paces an async function, keyed by its arguments', async () => {
      const limiter = paced(url(), '4/second'); // a slot every 250 ms
      const calls = [];
      const get = limiter.wrap(async function get(host, path) {
        calls.push([this?.tag, host, path]);
        return `${host}${path}`;
      }, { key: (host) => `host:${host}` });
      assert.equal(get.name, 'paced get');
      const start = performance.now();
      assert.deepEqual(await Promise.all([get('a', '/1'), get('b', '/1')]), ['a/1', 'b/1']); // two keys: no wait
      assert.ok(performance.now() - start < 200);
      assert.equal(await get.call({ tag: 't' }, 'a', '/2'), 'a/2'); // waits for host a's next slot
      assert.ok(performance.now() - start >= 250 - EARLY_MS);
      assert.deepEqual(calls.slice(0, 2).sort(), [[undefined, 'a', '/1'], [undefined, 'b', '/1']]);
      assert.deepEqual(calls[2], ['t', 'a', '/2']);

      const once = limiter.wrap(() => 'sent', { key: Buffer.from([0, 1]), timeoutMs: 0 });
      assert.equal(await once(), 'sent');
      await assert.rejects(once(), RateLimitTimeoutError); // fn is not called
      const failing = limiter.wrap(async () => { throw new Error('partner down'); }, { key: 'f' });
      await assert.rejects(failing(), /partner down/);
    });

    test('bad options are invalid arguments, and charge nothing', async () => {
      const limiter = paced(url());
      for (const options of [{ timeoutMs: -1 }, { timeoutMs: '1s' }, { signal: {} }, 'fast', null]) {
        await assert.rejects(limiter.acquire('k', options), { code: codes.INVALID_ARGUMENT });
      }
      await assert.rejects(limiter.acquire(''), { code: codes.INVALID_ARGUMENT });
      await assert.rejects(limiter.acquire('k', { cost: 0 }), { code: codes.INVALID_ARGUMENT });
      assert.throws(() => limiter.wrap('f', { key: 'k' }), { code: codes.INVALID_ARGUMENT, message: /fn must be/ });
      assert.throws(() => limiter.wrap(async () => {}, {}), { code: codes.INVALID_ARGUMENT, message: /key must be/ });
      assert.throws(() => limiter.wrap(async () => {}, { key: 'k', timeoutMs: NaN }), { message: /timeoutMs/ });
      assert.equal((await limiter.peek('k')).remaining, 1);
    });

    for (const algorithm of ['fixed_window', 'sliding_window', 'sliding_log']) {
      test(`${algorithm} refuses to reserve`, async () => {
        const limiter = new Limiter({ policy: '5/second', store: url(), algorithm,
          prefix: `w-${randomBytes(4).toString('hex')}` });
        await assert.rejects(limiter.acquire('k'), { code: codes.INVALID_ARGUMENT });
        assert.equal((await limiter.peek('k')).remaining, 5);
      });
    }

    test('a thousand callers in flight get one slot each', async () => {
      const limiter = paced(url(), '2000/second'); // a slot every 0.5 ms
      const start = performance.now();
      const decisions = await Promise.all(Array.from({ length: 1000 }, () => limiter.acquire('k')));
      assert.ok(performance.now() - start >= 999 * 0.5 - EARLY_MS);
      assert.ok(decisions.every((d) => d.allowed));
      assert.ok(new Set(decisions.map((d) => d.waitUs)).size > 900);
    });

    test('aborting every waiter leaves a usable key; one signal for all of them is one listener', async () => {
      const limiter = paced(url(), '10/second'); // 100 waiters would need 10 s
      const controller = new AbortController();
      const warnings = [];
      const onWarning = (w) => warnings.push(w.name);
      process.on('warning', onWarning);
      const waiters = Array.from({ length: 100 }, () => limiter.acquire('k', { signal: controller.signal }));
      await sleep(100);
      assert.equal(getEventListeners(controller.signal, 'abort').length, 1);
      controller.abort();
      const results = await Promise.allSettled(waiters);
      await sleep(10);
      process.off('warning', onWarning);
      assert.deepEqual(warnings.filter((name) => name === 'MaxListenersExceededWarning'), []);
      assert.ok(results.filter((r) => r.status === 'rejected').length >= 98);
      assert.ok(results.every((r) => r.status === 'fulfilled' || r.reason.name === 'AbortError'));
      assert.ok((await limiter.reserve('k')).waitMs <= 10100);
    });
  });
}

test('a wait is one reservation and one timer: no polling', async () => {
  const limiter = paced(redis.url, '20/second');
  await limiter.acquire('warm-up');
  const commands = () => [...execFileSync('redis-cli', ['-p', String(redis.port), 'info', 'commandstats'],
    { encoding: 'utf8' }).matchAll(/^cmdstat_eval(?:sha)?:calls=(\d+)/gm)].reduce((n, m) => n + Number(m[1]), 0);
  const before = commands();
  for (let i = 0; i < 5; i++) await limiter.acquire('k'); // 4 waits of 50 ms
  await Promise.all(Array.from({ length: 5 }, () => limiter.acquire('k2')));
  assert.equal(commands() - before, 10); // one script per acquire: no retries (scripts run, not the commands in them)
});

test('a dead store follows onStoreError', async () => {
  const own = new RedisServer();
  await own.start();
  try {
    const limiter = (onStoreError) => new Limiter({ policy: '5/second', store: own.url, algorithm: 'gcra', burst: 1,
      onStoreError });
    const [raising, opening, closing] = [limiter('raise'), limiter('allow'), limiter('deny')];
    assert.equal((await raising.acquire('k')).allowed, true); // connected
    await own.kill();
    await assert.rejects(raising.acquire('k'), (e) => e.code.startsWith('ERR_RATEWARDEN_STORE'));
    assert.equal((await opening.acquire('k')).waitUs, 0); // fail open: go now
    await assert.rejects(closing.acquire('k'), (e) => e instanceof RateLimitTimeoutError && e.timeoutMs === undefined &&
      /onStoreError is "deny"/.test(e.message)); // fail closed: a refusal, though no timeout was given
    // A timeout given, the refusal is still the store's, not the timeout's.
    await assert.rejects(closing.acquire('k', { timeoutMs: 5000 }), (e) => e instanceof RateLimitTimeoutError &&
      e.timeoutMs === undefined && /onStoreError is "deny"/.test(e.message));
  } finally {
    await own.close();
  }
});

test('a wait longer than timeoutMs is the timeout\'s, on a limiter with onStoreError deny', async () => {
  const busy = new Limiter({ policy: '5/second', algorithm: 'gcra', burst: 1, onStoreError: 'deny' });
  await busy.acquire('k');
  await assert.rejects(busy.acquire('k', { timeoutMs: 50 }), (e) => e instanceof RateLimitTimeoutError &&
    e.timeoutMs === 50 && /more than the timeout of 50 ms/.test(e.message));
});

test('an abort while the store answers rejects at once; the slot goes back when the answer comes', async () => {
  const limiter = paced(`${redis.url}?timeout=5s`, '5/second', 2);
  await limiter.peek('k'); // connected
  await redis.stop(); // SIGSTOP: the reservation waits for the server
  try {
    const controller = new AbortController();
    const waiting = limiter.acquire('k', { signal: controller.signal });
    await sleep(30);
    const start = performance.now();
    controller.abort();
    await assert.rejects(waiting, { name: 'AbortError' });
    assert.ok(performance.now() - start < 100); // no answer awaited
  } finally {
    await redis.cont();
  }
  await sleep(200);
  assert.equal((await limiter.peek('k')).remaining, 2);
});

test('examples/node/pacing.js runs (on Redis)', () => {
  const example = require('node:path').join(__dirname, '..', '..', 'examples', 'node', 'pacing.js');
  const out = execFileSync(process.execPath, [example, redis.url], { encoding: 'utf8', timeout: 60000 });
  // The timeout and the abort come while the 20 calls wait: their slots are about 2 s away, whatever the machine's load.
  const [first, second, third] = out.trim().split('\n');
  assert.match(first, /^gave up: the next slot is \d+ ms away$/);
  assert.equal(second, 'AbortError');
  assert.match(third, /^20 calls at once: the last one (1\.9|2\.\d) s after the first \(one every 100 ms\)$/);
});
