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
