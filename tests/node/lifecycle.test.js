'use strict';
// The addon and the process: the loop stays alive while calls are in flight (and only then), and calls still in
// flight when a process exits or a worker thread is terminated do not crash it.

const { after, before, test } = require('node:test');
const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');
const path = require('node:path');
const { Worker } = require('node:worker_threads');

const { Limiter } = require('ratewarden');
const { RedisServer } = require('./helpers/redis_server');

const redis = new RedisServer();
before(() => redis.start());
after(() => redis.close());

const lib = JSON.stringify(path.join(__dirname, '..', '..', 'node', 'lib'));

function runNode(source) {
  return spawnSync(process.execPath, ['-e', source], { encoding: 'utf8', timeout: 20000 });
}

test('a pending call keeps the process alive until it settles, then lets it exit', () => {
  const r = runNode(`
    const { Limiter } = require(${lib});
    new Limiter({ policy: '5/minute', store: '${redis.url}' }).hit('alive').then((d) => console.log('settled', d.allowed));
  `);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout.trim(), 'settled true');
});

test('process.exit with 1000 calls in flight exits cleanly', async () => {
  const sleeping = redis.command('DEBUG', 'SLEEP', '0.3');
  const r = runNode(`
    const { Limiter } = require(${lib});
    const l = new Limiter({ policy: '1000000/minute', store: '${redis.url}?timeout=5s' });
    for (let i = 0; i < 1000; i++) l.hit('k' + i).catch(() => {});
    setTimeout(() => process.exit(0), 50);
  `);
  await sleeping;
  assert.equal(r.signal, null, r.stderr);
  assert.equal(r.status, 0, r.stderr);
});

test('a worker thread terminated with calls in flight; the main thread goes on', async () => {
  const sleeping = redis.command('DEBUG', 'SLEEP', '0.3');
  const worker = new Worker(`
    const { parentPort } = require('node:worker_threads');
    const { Limiter } = require(${lib});
    const l = new Limiter({ policy: '1000000/minute', store: '${redis.url}?timeout=5s' });
    for (let i = 0; i < 1000; i++) l.hit('w' + i).catch(() => {});
    parentPort.postMessage('started');
  `, { eval: true });
  await new Promise((resolve) => worker.once('message', resolve));
  await worker.terminate();
  await sleeping;
  const limiter = new Limiter({ policy: '5/minute', store: redis.url });
  assert.equal((await limiter.hit('after-worker')).allowed, true);
});
