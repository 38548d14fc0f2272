// A Node worker of the soak (bench/soak/soak.py), on the package of this tree:
//
//   node worker.js NAME URL...
//
// Each round, on every store, the Promise calls (hit, peek, hitMany, reserve, reset) all in flight at once, and on
// the memory store the synchronous ones too (hitSync, allowSync). Store errors (a store being restarted) are
// counted; anything else is a failure that ends the process. Once a second it writes one JSON line to stdout: its
// pid, name, calls made, store errors and the memory store's figures. SIGTERM ends the loop and the process, with
// status 0.
'use strict';
const { Limiter, codes } = require('../..');

const POLICY = '1000 per 10 seconds'; // gcra (reserve needs it); a key's state lives for the period
const HOT_KEYS = 16; // keys every worker of every runtime hits: contention across processes
const FRESH_COST = 1000; // the whole quota: that key's state then lives for the period, till evicted or expired
const PAUSE_MS = Number(process.env.RW_SOAK_PAUSE_MS || 5); // between rounds: a steady load, not a busy loop
const STORE_ERRORS = new Set([codes.STORE_UNAVAILABLE, codes.STORE_TIMEOUT, codes.STORE]);

const [name, ...urls] = process.argv.slice(2);
const limiters = urls.map((store) => new Limiter({ policy: POLICY, store, algorithm: 'gcra', prefix: 'soak' }));
const memory = limiters.filter((l) => l.store.inMemory).map((l) => l.store);
let round = 0;
let calls = 0;
let storeErrors = 0;
let stopping = false;
let lastReport = 0;

function counted(fn) {
  calls += 1;
  try {
    fn();
  } catch (error) {
    if (!STORE_ERRORS.has(error.code)) throw error;
    storeErrors += 1;
  }
}

async function oneRound() {
  round += 1;
  const hot = `hot-${round % HOT_KEYS}`;
  const fresh = [0, 1, 2].map((i) => `${name}-${process.pid}-${round}-${i}`);
  const pending = [];
  for (const limiter of limiters) {
    if (limiter.store.inMemory) {
      counted(() => limiter.hitSync(hot));
      counted(() => limiter.allowSync(fresh[2]));
    }
    pending.push(limiter.hit(hot), limiter.hit(fresh[0], { cost: FRESH_COST }), limiter.peek(hot),
      limiter.hitMany([hot, ...fresh]), limiter.reserve(hot, { maxWaitMs: 0 }), limiter.reset(fresh[1]));
  }
  calls += pending.length;
  for (const result of await Promise.allSettled(pending)) {
    if (result.status === 'fulfilled') continue;
    if (!STORE_ERRORS.has(result.reason.code)) throw result.reason;
    storeErrors += 1;
  }
}

function report(final) {
  const now = Date.now();
  if (!final && now - lastReport < 1000) return;
  lastReport = now;
  const line = { pid: process.pid, name, calls, store_errors: storeErrors };
  if (memory.length) {
    const stats = memory[0].stats();
    Object.assign(line, { memory_keys: stats.keys, memory_evictions: stats.evictions });
  }
  const heap = process.memoryUsage(); // V8's own view beside the RSS the soak reads: heap used and held, in MB
  Object.assign(line, { heap_used_mb: +(heap.heapUsed / 2 ** 20).toFixed(1),
    heap_total_mb: +(heap.heapTotal / 2 ** 20).toFixed(1), external_mb: +(heap.external / 2 ** 20).toFixed(1) });
  if (final) line.done = true;
  process.stdout.write(`${JSON.stringify(line)}\n`);
}

process.on('SIGTERM', () => {
  stopping = true;
});

(async () => {
  while (!stopping) {
    await oneRound();
    report(false);
    await new Promise((resolve) => setTimeout(resolve, PAUSE_MS));
  }
  report(true);
})().catch((error) => {
  console.error(`${name}:`, error);
  process.exit(1);
});
