'use strict';
// The addon and the process: the loop stays alive while calls are in flight (and only then); calls still in flight
// when a process exits, a worker thread is terminated or an environment is cleaned up never crash it, and leave
// no thread or socket behind; a Store that is collected closes its connections.

const { after, before, test } = require('node:test');
const assert = require('node:assert/strict');
const { execFile, spawnSync } = require('node:child_process');
const path = require('node:path');
const { Worker } = require('node:worker_threads');

const { Limiter } = require('ratewarden');
const { RedisServer } = require('./helpers/redis_server');

const redis = new RedisServer();
before(() => redis.start());
after(() => redis.close());

const lib = JSON.stringify(path.join(__dirname, '..', '..', 'node', 'lib'));

function runNode(source, flags = []) {
  return spawnSync(process.execPath, [...flags, '-e', source], { encoding: 'utf8', timeout: 20000 });
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

// The native Limiter's own functions (hitSync, allowSync, ...) hold its C++ object. They reach JS only once its
// constructor can no longer fail, in one step that runs no JS: a constructor that fails frees that object, and in a
// worker being terminated V8 still hands the object to JS (node-addon-api cannot throw there), whose code then
// called allowSync() into freed memory (node/src/limiter_wrap.cc). Here a subclass's setters would see them, and the
// second one would make the constructor fail.
test('a native Limiter hands JS its own functions last, running no JS: a failed constructor leaves none behind', () => {
  const native = require('../../node/lib/native');
  const store = new native.Store('memory://');
  let seen;
  class Spy extends native.Limiter {
    set allowSync(fn) { seen = fn; }
    set peekSync(fn) { throw new Error('a setter refused it'); }
  }
  assert.throws(() => new Spy(store, 'nonsense', {}, new Float64Array(9)), { code: 'ERR_RATEWARDEN_INVALID_ARGUMENT' });
  const out = new Float64Array(9);
  const limiter = new Spy(store, '2/minute', {}, out);
  assert.equal(seen, undefined);
  assert.ok(Object.hasOwn(limiter, 'allowSync') && Object.hasOwn(limiter, 'peekSync'));
  const allowed = () => (limiter.allowSync('k'), out[0] === 1);  // the native allowSync answers in out[0]
  assert.deepEqual([allowed(), allowed(), allowed()], [true, true, false]);
});

test('a Store whose JS object is collected is destroyed: its connections close', () => {
  const r = runNode(`
    const fs = require('node:fs');
    const { Limiter, Store } = require(${lib});
    const sockets = () => fs.readdirSync('/proc/self/fd').filter((fd) => {
      try { return fs.readlinkSync('/proc/self/fd/' + fd).startsWith('socket:'); } catch { return false; }
    }).length;
    const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
    const policy = '1000000/minute';
    async function use(store) {
      const limiter = new Limiter({ policy, store });
      await Promise.all(Array.from({ length: 200 }, (_, i) => limiter.hit('gc' + i)));
    }
    async function collected(base) {
      for (let i = 0; i < 200 && sockets() !== base; i++) {
        gc();
        await sleep(10);
      }
      return sockets();
    }
    (async () => {
      globalThis.kept = new Limiter({ policy, store: '${redis.url}' });  // this one stays
      await kept.hit('main');
      const base = sockets();
      await use(new Store('${redis.url}'));           // a Store object
      const withStore = sockets();
      const afterStore = await collected(base);
      await use('${redis.url}?pool=2');              // a URL string: the store the limiters of that URL share
      const withUrl = sockets();
      const afterUrl = await collected(base);
      console.log(JSON.stringify({ base, withStore, afterStore, withUrl, afterUrl }));
    })();
  `, ['--expose-gc']);
  assert.equal(r.status, 0, r.stderr);
  const counts = JSON.parse(r.stdout);
  assert.ok(counts.withStore > counts.base && counts.withUrl > counts.base, r.stdout);
  assert.equal(counts.afterStore, counts.base, r.stdout);
  assert.equal(counts.afterUrl, counts.base, r.stdout);
});

// Teardown with 20,000 calls in flight, 50 times for each way an environment can end (tests/node/helpers/
// teardown.js), 4 processes at a time, ending at different moments: before the calls reach the I/O thread, while a
// worker is still making them, while their answers arrive. Every 5th run of the worker cases waits for the calls the
// dead worker left and checks that the process has the threads and sockets it had before the worker.
const REPEAT = 50;
const PARALLEL = 4;
const CALLS = 20000;
const DELAYS = [0, 1, 3, 10, 30];
const teardown = path.join(__dirname, 'helpers', 'teardown.js');

function runTeardown(scenario, i) {
  const check = scenario !== 'exit' && i % 5 === 0 ? '1' : '0';
  const args = [teardown, scenario, `${redis.url}?timeout=5s`, String(CALLS), String(DELAYS[i % DELAYS.length]), check];
  return new Promise((resolve) => {
    execFile(process.execPath, args, { encoding: 'utf8', timeout: 30000 }, (error, stdout, stderr) => {
      resolve({ i, status: error ? error.code ?? null : 0, signal: error ? error.signal ?? null : null, stdout, stderr,
        check });
    });
  });
}

for (const scenario of ['exit', 'terminate', 'cleanup']) {
  const what = {
    exit: 'process.exit()',
    terminate: 'worker.terminate()',
    cleanup: 'a worker that ends itself (its environment cleaned up)',
  }[scenario];
  test(`${what} with ${CALLS} calls in flight, ${REPEAT} times: no abort, nothing left behind`, async () => {
    const results = [];
    let next = 0;
    await Promise.all(Array.from({ length: PARALLEL }, async () => {
      while (next < REPEAT) results.push(await runTeardown(scenario, next++));
    }));
    const failed = results.filter((r) => r.status !== 0 || r.signal !== null || r.stderr !== '');
    assert.deepEqual(failed.map((r) => `run ${r.i}: status ${r.status}, signal ${r.signal}: ${r.stderr.slice(0, 500)}`), []);
    for (const r of results.filter((x) => x.check === '1')) {
      const { before: b, after: a } = JSON.parse(r.stdout);
      assert.deepEqual(a, b, `run ${r.i}: ${r.stdout}`);
    }
  });
}
