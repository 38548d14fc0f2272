'use strict';
// One teardown with calls in flight, in a process of its own (tests/node/lifecycle.test.js runs it many times):
//   node teardown.js <scenario> <redis url> <calls> <delay ms> <check: 0|1>
// Scenarios:
//   exit       the main thread makes the calls, then process.exit(0) after <delay> ms (0: at once)
//   terminate  a worker thread makes the calls; the main thread terminates it <delay> ms after it starts them
//              (while it is still making them, for small delays)
//   cleanup    a worker thread makes the calls, then ends itself with process.exit(0) after <delay> ms: its
//              environment is cleaned up with the calls in flight
// The process must exit with status 0 and print nothing on stderr. With <check> 1, after a worker is gone the main
// thread waits until every call the worker left in flight has ended, then prints one JSON line: the process's
// threads and sockets before the worker started, when it was gone, and after — the same before and after when
// nothing was left behind.

const fs = require('node:fs');
const path = require('node:path');
const { Worker } = require('node:worker_threads');

const lib = path.join(__dirname, '..', '..', '..', 'node', 'lib');
const [scenario, url, callsArg, delayArg, checkArg] = process.argv.slice(2);
const calls = Number(callsArg);
const delay = Number(delayArg);
const check = checkArg === '1';

function threads() {
  return fs.readdirSync('/proc/self/task').length;
}

function sockets() {
  let n = 0;
  for (const fd of fs.readdirSync('/proc/self/fd')) {
    try {
      if (fs.readlinkSync(`/proc/self/fd/${fd}`).startsWith('socket:')) n++;
    } catch {}  // the directory's own descriptor is gone already
  }
  return n;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// The calls, on whichever thread runs this (the main thread, or a worker as source text). Every 100th call is a bad
// one, which throws in the addon: an error to throw while the environment may be going away.
function makeCalls(lib, url, n, ready = () => {}) {
  const { Limiter } = require(lib);
  const limiter = new Limiter({ policy: '1000000/minute', store: url });
  ready();
  for (let i = 0; i < n; i++) {
    if (i % 100 === 50) limiter.hitMany(['teardown', ''], { cost: 2 }).catch(() => {});
    else if (i % 100 === 99) limiter.hit('').catch(() => {});
    else limiter.hit(`teardown${i % 1000}`).catch(() => {});
  }
}

async function inWorker(end) {
  // The main thread's own store first, held to the end: the I/O thread is running and counted before the worker
  // starts. The worker's URL differs (its prefix), so that the worker has a store of its own: limiters given one URL
  // share one store across threads, and that store's pool would grow with the worker's calls and stay.
  const { Limiter } = require(lib);
  const main = new Limiter({ policy: '1000000/minute', store: url });
  await main.hit('main');
  const workerUrl = `${url}${url.includes('?') ? '&' : '?'}prefix=teardown-worker`;
  const before = { threads: threads(), sockets: sockets() };
  const worker = new Worker(`
    const { parentPort } = require('node:worker_threads');
    (${makeCalls})(${JSON.stringify(lib)}, ${JSON.stringify(workerUrl)}, ${calls}, () => parentPort.postMessage('started'));
    ${end === 'cleanup' ? `setTimeout(() => process.exit(0), ${delay});` : ''}
  `, { eval: true });
  const exited = new Promise((resolve) => worker.once('exit', resolve));
  await new Promise((resolve) => worker.once('message', resolve));
  if (end === 'terminate') {
    if (delay > 0) await sleep(delay);
    await worker.terminate();
  }
  await exited;
  if (!check) process.exit(0);  // the dead worker's answers may still be arriving: the process ends meanwhile
  const gone = { threads: threads(), sockets: sockets() };
  // Every call the worker left ends within the store's timeout; then its store is destroyed and its connections
  // closed, on the I/O thread.
  let after;
  for (let i = 0; i < 300; i++) {
    after = { threads: threads(), sockets: sockets() };
    if (after.threads === before.threads && after.sockets === before.sockets) break;
    await sleep(50);
  }
  console.log(JSON.stringify({ scenario, before, gone, after, mainStore: main.store.shared }));
}

if (scenario === 'exit') {
  makeCalls(lib, url, calls);
  if (delay === 0) process.exit(0);
  setTimeout(() => process.exit(0), delay);
} else if (scenario === 'terminate' || scenario === 'cleanup') {
  inWorker(scenario);
} else {
  throw new Error(`unknown scenario ${scenario}`);
}
