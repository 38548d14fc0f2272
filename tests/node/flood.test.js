'use strict';
// A flood: 100,000 calls in flight from one Node process on one Redis. A call in flight is a record, not a thread:
// all of them settle, exactly, and the process has the same threads before and after — the library's one I/O thread
// on top of Node's own.

const { after, before, test } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');

const { Limiter } = require('ratewarden');
const { RedisServer } = require('./helpers/redis_server');

const redis = new RedisServer();
before(() => redis.start());
after(() => redis.close());

function threads() {
  return fs.readdirSync('/proc/self/task').map((t) => fs.readFileSync(`/proc/self/task/${t}/comm`, 'utf8').trim());
}

test('100,000 calls in flight on one Redis all settle, and the thread count stays the same', async () => {
  const beforeLibrary = threads();
  // Answers queue up behind 100,000 requests: a timeout that waits for them.
  const limiter = new Limiter({ policy: '600/minute', store: `${redis.url}?timeout=60s` });
  await limiter.hit('warm-up');
  const before = threads();
  assert.equal(before.length, beforeLibrary.length + 1, `the I/O thread: ${beforeLibrary} -> ${before}`);

  const started = performance.now();
  const calls = [];
  for (let i = 0; i < 100_000; i++) calls.push(limiter.hit(`flood${i % 100}`));
  const during = threads();
  const decisions = await Promise.all(calls);
  const seconds = (performance.now() - started) / 1000;
  const afterwards = threads();

  // 100 keys × 1000 hits, 600 allowed per key.
  assert.equal(decisions.length, 100_000);
  assert.equal(decisions.filter((d) => d.allowed).length, 60_000);
  assert.equal(during.length, before.length, `${before} -> ${during}`);
  assert.equal(afterwards.length, before.length, `${before} -> ${afterwards}`);
  console.log(`flood: 100,000 calls settled in ${seconds.toFixed(2)} s; threads ${before.length} before and after ` +
    `(${before.join(', ')})`);
});

// While a batch of answers is settled, the I/O thread's wake-ups are held until the microtasks have run (calls.js),
// so that the calls the continuations make leave together. Every call is still sent: those made in the
// continuations, those made after a further await (a timer, a setImmediate, another promise), and those of a caller
// whose continuation throws.
test('calls made from the continuations of a batch of answers all leave and settle, exactly', async () => {
  const limiter = new Limiter({ policy: '120/minute', store: `${redis.url}?timeout=10s&prefix=held` });
  const caller = async (c) => {
    let allowed = 0;
    for (let i = 0; i < 150; i++) {
      if ((await limiter.hit(`held${c % 20}`)).allowed) allowed++;
      if (i % 7 === 3) await new Promise((resolve) => setImmediate(resolve));
      if (i % 11 === 5) await new Promise((resolve) => setTimeout(resolve, 1));
      if (i % 13 === 7) await Promise.resolve();
    }
    return allowed;
  };
  const thrower = async () => {
    await limiter.hit('thrower');
    throw new Error('a continuation that throws');
  };
  const results = await Promise.allSettled([...Array.from({ length: 100 }, (_, c) => caller(c)), thrower()]);
  const allowed = results.slice(0, 100).reduce((sum, r) => sum + r.value, 0);
  assert.equal(results[100].status, 'rejected');
  // 20 keys, 5 callers × 150 hits each: 120 allowed per key.
  assert.equal(allowed, 20 * 120);
  for (let k = 0; k < 20; k++) assert.equal((await limiter.peek(`held${k}`)).remaining, 0);
});
