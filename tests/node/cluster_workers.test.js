'use strict';
// Node does not fork a running process: node:cluster workers start fresh, each with its own connections and its own
// decisions (the fork handling of docs/deployment.md is for C, C++ and Python).

const { after, before, test } = require('node:test');
const assert = require('node:assert/strict');
const { execFileSync } = require('node:child_process');
const cluster = require('node:cluster');
const path = require('node:path');

const { Limiter } = require('ratewarden');
const { RedisServer } = require('./helpers/redis_server');

const redis = new RedisServer();
const connectedClients = () => Number(execFileSync('redis-cli', ['-p', String(redis.port), 'INFO', 'clients'])
  .toString().match(/connected_clients:(\d+)/)[1]);
before(() => redis.start());
after(() => redis.close());

test('node:cluster workers get their own connections and their own decisions', async () => {
  const prefix = `workers${process.pid}`;
  const primary = new Limiter({ policy: '100/day', store: redis.url, prefix });
  assert.equal((await primary.hit('primary')).used, 1); // connected before the workers start
  const before = connectedClients();

  cluster.setupPrimary({ exec: path.join(__dirname, 'helpers', 'cluster_worker.js') });
  const env = { RW_WORKER: JSON.stringify({ url: redis.url, prefix }) };
  const workers = [cluster.fork(env), cluster.fork(env)];
  const reports = await Promise.all(workers.map((w) => new Promise((resolve, reject) => {
    w.once('message', resolve);
    w.once('exit', (code) => reject(new Error(`worker exited with ${code} before reporting`)));
  })));
  const during = connectedClients();
  await Promise.all(workers.map((w) => new Promise((resolve) => {
    w.once('exit', resolve);
    w.send('exit');
  })));

  for (const report of reports) {
    assert.equal(report.error, undefined, report.error);
    assert.deepEqual(report.seen, Array.from({ length: 50 }, (_, i) => [1000 * report.id, i + 1]));
  }
  assert.ok(during >= before + 2, `connected clients: ${before} before the workers, ${during} with them`);
  assert.equal((await primary.hit('primary')).used, 2);
});
