'use strict';
// Events arriving while Node environments end, in a process of its own (tests/node/events.test.js runs it many
// times):  node events_teardown.js <scenario> <workers> <delay ms>
// Every worker thread listens to the package's events and makes events of its own (memory stores evicting live
// keys, one source each, so none is held back by the core's rate limit), while the main thread makes a burst of
// SOURCES events of its own. Scenarios:
//   terminate  the main thread terminates the workers <delay> ms into the burst
//   cleanup    each worker ends itself with process.exit(0) after <delay> ms: its environment cleaned up as events
//              come
//   exit       the main thread calls process.exit(0) <delay> ms into the burst, its workers running
// Apart from exit, the main thread then waits for every event of its own burst and prints one JSON line:
// { received, sources }. The process must exit with status 0 and print nothing on stderr.

const path = require('node:path');
const { Worker } = require('node:worker_threads');

const lib = path.join(__dirname, '..', '..', '..', 'node', 'lib');
const [scenario, workersArg, delayArg] = process.argv.slice(2);
const workers = Number(workersArg);
const delay = Number(delayArg);
const SOURCES = 300;

// Live evictions of a memory store of its own bound: one event (the store's name is its source).
function evict(lib, maxKeys) {
  const { Limiter, Store } = require(lib);
  const limiter = new Limiter({ policy: '100/minute', store: new Store(`memory://?max_keys=${maxKeys}`) });
  for (let i = 0; i <= maxKeys; i++) limiter.allowSync(`k${i}`);
}

function startWorker(index) {
  const worker = new Worker(`
    const { parentPort } = require('node:worker_threads');
    const { events } = require(${JSON.stringify(lib)});
    let seen = 0;
    events.on('event', () => { seen++; });
    const evict = ${evict};
    let next = 0;
    (function more() {  // its own events, a few per turn, until it ends
      for (let i = 0; i < 5; i++) evict(${JSON.stringify(lib)}, ${10000 + index * 1000} + (next++ % 1000));
      setImmediate(more);
    })();
    parentPort.postMessage('started');
    ${scenario === 'cleanup' ? `setTimeout(() => process.exit(0), ${delay});` : ''}
  `, { eval: true });
  return {
    worker,
    started: new Promise((resolve) => worker.once('message', resolve)),
    exited: new Promise((resolve) => worker.once('exit', resolve)),
  };
}

async function main() {
  const { events } = require(lib);
  const mine = new Set();
  events.on('event', (e) => {
    if (e.kind === 'live_evictions' && /max_keys=(\d+)&/.exec(e.store)?.[1] < 1000) mine.add(e.store);
  });
  const started = Array.from({ length: workers }, (_, i) => startWorker(i));
  await Promise.all(started.map((w) => w.started));
  const t0 = Date.now();
  let ended = false;
  const end = async () => {
    ended = true;
    if (scenario === 'exit') process.exit(0);
    if (scenario === 'terminate') await Promise.all(started.map((w) => w.worker.terminate()));
  };
  const timer = setTimeout(end, delay);
  for (let s = 0; s < SOURCES; s++) {  // the burst: 10 sources a turn, the loop free in between
    evict(lib, 64 + s);
    if (s % 10 === 9) await new Promise((resolve) => setImmediate(resolve));
  }
  if (!ended) {
    clearTimeout(timer);
    await end();
  }
  await Promise.all(started.map((w) => w.exited));
  for (let i = 0; i < 500 && mine.size < SOURCES; i++) await new Promise((resolve) => setTimeout(resolve, 20));
  console.log(JSON.stringify({ received: mine.size, sources: SOURCES, ms: Date.now() - t0 }));
}

main();
