'use strict';
// Redis Cluster through the Node binding, on a real 3-master cluster: the hang regression (issue 11: 40 limiters ×
// 200 hits deadlocked the thread pool the core had then, and never settled), and every operation across slots.

const { after, before, test } = require('node:test');
const assert = require('node:assert/strict');

const { Limiter, Store } = require('ratewarden');
const { RedisCluster } = require('./helpers/redis_server');

const cluster = new RedisCluster();
before(() => cluster.start());
after(() => cluster.close());

test('40 limiters × 200 hits on a cluster: every call settles, in seconds', async () => {
  const limiters = Array.from({ length: 40 }, (_, i) => new Limiter({ policy: `150/minute`, store: cluster.url,
    prefix: `hang${i}` }));
  const started = performance.now();
  const calls = limiters.flatMap((limiter) => Array.from({ length: 200 }, (_, j) => limiter.hit(`user${j % 4}`)));
  let timer;
  const deadline = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error('hits on the cluster did not settle within 20 s')), 20000);
  });
  const decisions = await Promise.race([Promise.all(calls), deadline]).finally(() => clearTimeout(timer));
  const seconds = (performance.now() - started) / 1000;
  // Every limiter has 4 keys, 50 hits each, and allows 150 per key: everything is allowed, each key counted exactly.
  assert.equal(decisions.length, 8000);
  assert.equal(decisions.filter((d) => d.allowed).length, 8000);
  for (const limiter of limiters) {
    assert.deepEqual((await Promise.all([0, 1, 2, 3].map((k) => limiter.peek(`user${k}`)))).map((d) => d.used),
      [50, 50, 50, 50]);
  }
  console.log(`cluster: 8000 hits from 40 limiters settled in ${seconds.toFixed(2)} s`);
  assert.ok(seconds < 10, `${seconds.toFixed(2)} s`);
});

test('hit, peek, reset and hitMany across the slots of every node; the limit holds under concurrency', async () => {
  const store = new Store(cluster.url);
  const limiter = new Limiter({ policy: '10/minute', store, prefix: 'ops' });
  const keys = Array.from({ length: 60 }, (_, i) => `key${i}`);  // spread over the three masters
  const many = await limiter.hitMany(keys, { cost: 3 });
  assert.deepEqual(new Set(many.map((d) => d.remaining)), new Set([7]));
  const crowd = await Promise.all(Array.from({ length: 30 }, () => limiter.hit('key7')));
  assert.equal(crowd.filter((d) => d.allowed).length, 7);
  assert.equal((await limiter.peek('key7')).used, 10);
  await limiter.reset('key7');
  assert.equal((await limiter.peek('key7')).used, 0);
  assert.equal((await limiter.peek('key8')).used, 3);
});
