'use strict';
// Network stores never block the event loop: while 1000 hits wait on a Redis that DEBUG SLEEP holds for 500 ms, a
// 10 ms timer keeps ticking on schedule.

const { after, before, test } = require('node:test');
const assert = require('node:assert/strict');

const { Limiter } = require('ratewarden');
const { RedisServer } = require('./helpers/redis_server');

const redis = new RedisServer();
before(() => redis.start());
after(() => redis.close());

test('1000 hits in flight against a sleeping Redis leave the loop responsive', async () => {
  const limiter = new Limiter({ policy: '1000000/minute', store: `${redis.url}?timeout=5s` });
  await limiter.hit('warm-up');

  const sleeping = redis.command('DEBUG', 'SLEEP', '0.5');
  await new Promise((resolve) => setTimeout(resolve, 20));  // the server is asleep now
  const ticks = [];
  const timer = setInterval(() => ticks.push(performance.now()), 10);
  const started = performance.now();
  const hits = await Promise.all(Array.from({ length: 1000 }, (_, i) => limiter.hit(`key${i % 50}`)));
  const elapsed = performance.now() - started;
  clearInterval(timer);
  await sleeping;

  assert.equal(hits.filter((d) => d.allowed).length, 1000);
  assert.ok(elapsed >= 300, `the hits waited for the server (${elapsed.toFixed(0)} ms)`);
  const gaps = ticks.slice(1).map((t, i) => t - ticks[i]);
  assert.ok(ticks.length >= elapsed / 10 / 2, `${ticks.length} ticks in ${elapsed.toFixed(0)} ms`);
  // 10 ms timers on a shared 2-core machine: allow scheduling noise, but not a loop held for the sleep.
  assert.ok(Math.max(...gaps) < 100, `longest gap between ticks ${Math.max(...gaps).toFixed(1)} ms`);
});
