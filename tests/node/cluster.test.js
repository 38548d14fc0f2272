'use strict';
// Redis Cluster through the Node binding, on a real 3-master cluster: the hang regression (issue 11: 40 limiters ×
// 200 hits deadlocked the thread pool the core had then, and never settled), and every operation across slots.

const { after, before, test } = require('node:test');
const assert = require('node:assert/strict');
const { execFile, spawn } = require('node:child_process');
const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');
const { promisify } = require('node:util');

const { Limiter, Store } = require('ratewarden');
const { freePort, sleep } = require('./helpers/redis_server');

const run = promisify(execFile);

// A port whose cluster bus port (port + 10000) is free too.
async function clusterPort() {
  for (;;) {
    const port = await freePort();
    if (port + 10000 > 65535) continue;
    const busFree = await new Promise((resolve) => {
      const s = net.createServer().once('error', () => resolve(false)).listen(port + 10000, '127.0.0.1', () => {
        s.close(() => resolve(true));
      });
    });
    if (busFree) return port;
  }
}

// Three masters in fresh directories. Each redis-server runs under a shell that SIGKILLs it when its stdin closes:
// when close() ends it, or when this process dies, however it ends — a test run never leaves a server behind.
class Cluster {
  constructor() {
    this.dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ratewarden-node-cluster-'));
    this.nodes = [];
  }

  get url() {
    return `redis+cluster://${this.nodes.map((n) => `127.0.0.1:${n.port}`).join(',')}`;
  }

  async start() {
    for (let i = 0; i < 3; i++) {
      const port = await clusterPort();
      const dir = path.join(this.dir, String(port));
      fs.mkdirSync(dir);
      const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir,
        '--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf', '--cluster-node-timeout', '2000'];
      const guard = spawn('sh', ['-c', 'redis-server "$@" >/dev/null 2>&1 & echo $!; read _; kill -9 $!', 'sh', ...args],
        { stdio: ['pipe', 'pipe', 'inherit'] });
      guard.stdin.on('error', () => {});
      const pid = await new Promise((resolve) => guard.stdout.once('data', (d) => resolve(Number(String(d).trim()))));
      this.nodes.push({ port, pid, guard, exited: new Promise((resolve) => guard.once('close', resolve)) });
    }
    for (const { port } of this.nodes) await this.#until(port, 'PING', (out) => out.includes('PONG'));
    await run('redis-cli', ['--cluster', 'create', ...this.nodes.map((n) => `127.0.0.1:${n.port}`),
      '--cluster-replicas', '0', '--cluster-yes']);
    for (const { port } of this.nodes) await this.#until(port, 'CLUSTER INFO', (out) => out.includes('cluster_state:ok'));
    return this;
  }

  async #until(port, command, ok) {
    for (let i = 0; i < 400; i++) {
      const out = await run('redis-cli', ['-p', String(port), ...command.split(' ')]).then((r) => r.stdout, () => '');
      if (ok(out)) return;
      await sleep(25);
    }
    throw new Error(`redis-server on port ${port}: ${command} never answered as expected`);
  }

  async close() {
    for (const node of this.nodes) {
      node.guard.stdin.end();
      try {
        process.kill(node.pid, 'SIGKILL');
      } catch {}
    }
    await Promise.all(this.nodes.map((n) => n.exited));
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

const cluster = new Cluster();
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
