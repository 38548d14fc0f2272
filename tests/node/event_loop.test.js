'use strict';
// Network stores never block the event loop: while 1000 hits wait on a Redis that DEBUG SLEEP holds for 800 ms, a
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

  const sleeping = redis.command('DEBUG', 'SLEEP', '0.8');
  await new Promise((resolve) => setTimeout(resolve, 100));  // the server is asleep now
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
  // 10 ms timers on a busy 2-core machine see scheduling noise; a loop held by the calls would miss most ticks and
  // show one gap as long as the sleep.
  assert.ok(ticks.length >= elapsed / 10 / 3, `${ticks.length} ticks in ${elapsed.toFixed(0)} ms`);
  assert.ok(Math.max(...gaps) < 250, `longest gap between ticks ${Math.max(...gaps).toFixed(1)} ms`);
});
