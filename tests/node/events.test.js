'use strict';
// The core's events and the Node environments of a process: the core has one handler per process, and every
// environment that loaded the package (the main thread, each worker thread) gets every event on its own loop;
// nothing keeps a process alive for them; environments that end while events arrive never crash the process
// (tests/node/helpers/events_teardown.js, many times). The events of a Redis that dies: tests/node/metrics.test.js.

const { test } = require('node:test');
const assert = require('node:assert/strict');
const { execFile, spawnSync } = require('node:child_process');
const path = require('node:path');
const { Worker } = require('node:worker_threads');

const { Limiter, Store, events } = require('ratewarden');

const lib = JSON.stringify(path.join(__dirname, '..', '..', 'node', 'lib'));
let unique = 0;

// A memory store of its own bound that evicts a live key: one live_evictions event, from a source of its own.
function evict(maxKeys) {
  const store = new Store(`memory://?max_keys=${maxKeys}`);
  const limiter = new Limiter({ policy: '100/minute', store });
  for (let i = 0; i <= maxKeys; i++) limiter.allowSync(`k${i}`);
  return store.describe();
}

// The first event that `match`es. Events keep no loop alive (nothing of the package does), so the wait holds the
// loop open itself: without it, a test whose last handle was a worker just terminated saw its process end before
// the event arrived ("Promise resolution is still pending but the event loop has already resolved").
const nextEvent = (match) => new Promise((resolve, reject) => {
  const timer = setTimeout(() => {
    events.off('event', listener);
    reject(new Error('no such event within 10 s'));
  }, 10000);
  const listener = (e) => {
    if (!match(e)) return;
    clearTimeout(timer);
    events.off('event', listener);
    resolve(e);
  };
  events.on('event', listener);
});

test('an event on the main thread: live evictions of a memory store, with what to do about them', async () => {
  const maxKeys = 5000 + process.pid % 1000 + ++unique;
  const seen = nextEvent((e) => e.kind === 'live_evictions' && e.store.includes(`max_keys=${maxKeys}&`));
  const store = evict(maxKeys);
  const e = await seen;
  assert.deepEqual({ ...e, message: undefined }, { kind: 'live_evictions', store, message: undefined, suppressed: 0,
    warning: true });
  assert.match(e.message, /evicted to stay within max_keys=\d+.*raise max_keys/);
});

test('a worker thread gets the events of the main thread\'s stores, and the main thread those of the worker\'s', async () => {
  const worker = new Worker(`
    const { parentPort } = require('node:worker_threads');
    const { events, Limiter, Store } = require(${lib});
    events.on('event', (e) => { if (e.store.includes('max_keys=7001&')) parentPort.postMessage(e); });
    parentPort.on('message', () => {
      const limiter = new Limiter({ policy: '9/minute', store: new Store('memory://?max_keys=7002') });
      for (let i = 0; i <= 7002; i++) limiter.allowSync('w' + i);
    });
    parentPort.postMessage('ready');
  `, { eval: true });
  try {
    await new Promise((resolve) => worker.once('message', resolve));
    const inWorker = new Promise((resolve) => worker.once('message', resolve));
    evict(7001);
    assert.equal((await inWorker).kind, 'live_evictions');
    const fromWorker = nextEvent((e) => e.store.includes('max_keys=7002&'));
    worker.postMessage('evict');
    assert.equal((await fromWorker).kind, 'live_evictions');
  } finally {
    await worker.terminate();
  }
  // The worker's environment is gone: the main thread still gets events.
  const after = nextEvent((e) => e.store.includes('max_keys=7003&'));
  evict(7003);
  assert.equal((await after).kind, 'live_evictions');
});

test('listening to events keeps no process alive', () => {
  const r = spawnSync(process.execPath, ['-e', `
    const diagnosticsChannel = require('node:diagnostics_channel');
    const { events, Limiter, Store } = require(${lib});
    events.on('event', (e) => console.log(e.kind));
    diagnosticsChannel.subscribe('ratewarden:event', () => {});
    const limiter = new Limiter({ policy: '1/minute', store: new Store('memory://?max_keys=64') });
    for (let i = 0; i < 100; i++) limiter.allowSync('k' + i);
    setTimeout(() => console.log('done'), 200);
  `], { encoding: 'utf8', timeout: 10000 });
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(r.stdout.trim().split('\n'), ['live_evictions', 'done']);
});

test('a listener that throws is an uncaught exception of the process, as for any emitter', () => {
  const r = spawnSync(process.execPath, ['-e', `
    const { events, Limiter, Store } = require(${lib});
    process.on('uncaughtException', (error) => { console.log('caught', error.message); process.exit(0); });
    events.on('event', () => { throw new Error('listener bug'); });
    const limiter = new Limiter({ policy: '1/minute', store: new Store('memory://?max_keys=64') });
    for (let i = 0; i < 100; i++) limiter.allowSync('k' + i);
    setTimeout(() => {}, 2000);
  `], { encoding: 'utf8', timeout: 10000 });
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout.trim(), 'caught listener bug');
});

// Environments ending while events arrive (helpers/events_teardown.js), 20 times for each way an environment can
// end, 4 processes at a time, at different moments of a burst of events on every thread.
const REPEAT = 20;
const PARALLEL = 4;
const DELAYS = [0, 1, 5, 20, 50];
const teardown = path.join(__dirname, 'helpers', 'events_teardown.js');

function runTeardown(scenario, i) {
  return new Promise((resolve) => {
    execFile(process.execPath, [teardown, scenario, String(1 + (i % 3)), String(DELAYS[i % DELAYS.length])],
      { encoding: 'utf8', timeout: 60000 }, (error, stdout, stderr) => {
        resolve({ i, status: error ? error.code ?? null : 0, signal: error ? error.signal ?? null : null, stdout, stderr });
      });
  });
}

for (const scenario of ['terminate', 'cleanup', 'exit']) {
  const what = {
    terminate: 'worker.terminate()',
    cleanup: 'workers that end themselves (their environments cleaned up)',
    exit: 'process.exit() with workers running',
  }[scenario];
  test(`${what} while events arrive, ${REPEAT} times: no crash, and the main thread gets every event of its own`, async () => {
    const results = [];
    let next = 0;
    await Promise.all(Array.from({ length: PARALLEL }, async () => {
      while (next < REPEAT) results.push(await runTeardown(scenario, next++));
    }));
    const failed = results.filter((r) => r.status !== 0 || r.signal !== null || r.stderr !== '');
    assert.deepEqual(failed.map((r) => `run ${r.i}: status ${r.status}, signal ${r.signal}: ${r.stderr.slice(0, 500)}`), []);
    if (scenario === 'exit') return;
    for (const r of results) {
      const { received, sources } = JSON.parse(r.stdout);
      assert.equal(received, sources, `run ${r.i}: ${r.stdout}`);
    }
  });
}
