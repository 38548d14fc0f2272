'use strict';
// The in-process path (issue 21's Node rows), one command: node bench/node/in_process.js.
//
// On the memory store, one hot key and 10,000 keys cycled: hitSync and allowSync against the fixed window a user
// could write by hand in a Map (below), and the awaited hit against rate-limiter-flexible's awaited
// RateLimiterMemory.consume, one by one and with 1,000 calls in flight. Beside them, what no binding can go below:
// an N-API call that does nothing (native.emptyCall, taking its arguments as hitSync does), the cost of entering
// the addon at all; the same call reading the key as hitSync does (native.readKeyCall), what is paid before the
// core is reached; the core's hit alone, in a loop in C++ on keys read beforehand (native.coreHits); their sum, the
// floor of allowSync (issue 39: how far a target lies below it, and what the binding adds above it; on many keys a
// lower bound only, as the CPU overlaps and prefetches the misses of hits run back to back, which hits spaced out by
// JS and N-API do not get); Date.now() alone, the Map window's own clock read, which is most of that window's time
// (what is left of it is the Map's work); and a Promise already settled, awaited the same ways, whose ratio to RLF is
// the best any awaited hit could reach. Every measure runs once per round, interleaved, for BENCH_ROUNDS rounds
// (default 5) after one warm-up round; the table gives the medians and the median of the per-round ratios beside the
// issue's targets.
// Limits are never reached: every call is an allowed one, on both sides.

const { RateLimiterMemory } = require('rate-limiter-flexible');
const { Limiter } = require('ratewarden');
const native = require('../../node/lib/native');
const { interleaved } = require('./common');

const SYNC_CALLS = Number(process.env.BENCH_SYNC_CALLS || 1_000_000);
const ASYNC_CALLS = Number(process.env.BENCH_ASYNC_CALLS || 300_000);
const IN_FLIGHT = 1000;
const LIMIT = 1e9;
const WINDOW_MS = 3_600_000;
const POLICY = `${LIMIT}/${WINDOW_MS}ms`;

// What a user could write instead: a fixed window per key in a Map.
function mapWindow(limit, windowMs) {
  const windows = new Map();  // key -> { start, count }
  return (key) => {
    const now = Date.now();
    let w = windows.get(key);
    if (w === undefined || now - w.start >= windowMs) windows.set(key, (w = { start: now, count: 0 }));
    return ++w.count <= limit;
  };
}

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[sorted.length >> 1];
}

// Each measure has a loop of its own: a loop shared by several measures would see several functions at its call
// site, and V8 would inline none of them (a user's code calls one limiter from each place). A loop returns how many
// of its n calls were allowed: all of them (none for the floor calls, which answer nothing).
function checked(allowed, n) {
  if (allowed !== n && allowed !== 0) throw new Error(`a limit was reached (${allowed} of ${n} allowed)`);
}

function nsPerCall(n, loop) {
  const start = process.hrtime.bigint();
  const allowed = loop();
  const ns = Number(process.hrtime.bigint() - start) / n;
  checked(allowed, n);
  return ns;
}

const loops = {
  map(keys, n, byHand) {
    let allowed = 0;
    for (let i = 0; i < n; i++) if (byHand(keys[i % keys.length])) allowed++;
    return allowed;
  },
  hitSync(keys, n, limiter) {
    let allowed = 0;
    for (let i = 0; i < n; i++) if (limiter.hitSync(keys[i % keys.length]).allowed) allowed++;
    return allowed;
  },
  allowSync(keys, n, limiter) {
    let allowed = 0;
    for (let i = 0; i < n; i++) if (limiter.allowSync(keys[i % keys.length])) allowed++;
    return allowed;
  },
  emptyCall(keys, n, empty) {
    let allowed = 0;
    for (let i = 0; i < n; i++) if (empty(keys[i % keys.length])) allowed++;
    return allowed;
  },
  // The Map window's clock read alone (every call is counted as allowed: a clock never reads 0).
  dateNow(keys, n) {
    let allowed = 0;
    for (let i = 0; i < n; i++) if (Date.now() > 0) allowed++;
    return allowed;
  },
  readKeyCall(keys, n, readKey) {
    let allowed = 0;
    for (let i = 0; i < n; i++) if (readKey(keys[i % keys.length])) allowed++;
    return allowed;
  },
  // Awaited one by one, as in a request handler.
  async hitAwaited(keys, n, limiter) {
    let allowed = 0;
    for (let i = 0; i < n; i++) if ((await limiter.hit(keys[i % keys.length])).allowed) allowed++;
    return allowed;
  },
  async consumeAwaited(keys, n, rlf) {
    let allowed = 0;
    for (let i = 0; i < n; i++) if ((await rlf.consume(keys[i % keys.length])).remainingPoints >= 0) allowed++;
    return allowed;
  },
  // IN_FLIGHT calls started, then awaited together.
  async hitInFlight(keys, n, limiter) {
    let allowed = 0;
    const pending = new Array(IN_FLIGHT);
    for (let i = 0; i < n; i += IN_FLIGHT) {
      for (let j = 0; j < IN_FLIGHT; j++) pending[j] = limiter.hit(keys[(i + j) % keys.length]);
      for (const d of await Promise.all(pending)) if (d.allowed) allowed++;
    }
    return allowed;
  },
  async consumeInFlight(keys, n, rlf) {
    let allowed = 0;
    const pending = new Array(IN_FLIGHT);
    for (let i = 0; i < n; i += IN_FLIGHT) {
      for (let j = 0; j < IN_FLIGHT; j++) pending[j] = rlf.consume(keys[(i + j) % keys.length]);
      for (const r of await Promise.all(pending)) if (r.remainingPoints >= 0) allowed++;
    }
    return allowed;
  },
  // The floor of a Promise API: a Promise already settled with a ready object, awaited, then 1,000 in flight.
  async settledAwaited(keys, n, ready) {
    let allowed = 0;
    for (let i = 0; i < n; i++) if ((await Promise.resolve(ready)).allowed) allowed++;
    return allowed;
  },
  async settledInFlight(keys, n, ready) {
    let allowed = 0;
    const pending = new Array(IN_FLIGHT);
    for (let i = 0; i < n; i += IN_FLIGHT) {
      for (let j = 0; j < IN_FLIGHT; j++) pending[j] = Promise.resolve(ready);
      for (const d of await Promise.all(pending)) if (d.allowed) allowed++;
    }
    return allowed;
  },
};

async function nsPerAsyncCall(n, loop) {
  const start = process.hrtime.bigint();
  const allowed = await loop();
  const ns = Number(process.hrtime.bigint() - start) / n;
  checked(allowed, n);
  return ns;
}

async function section(name, keys) {
  const ours = new Limiter({ policy: POLICY });
  const rlf = new RateLimiterMemory({ points: LIMIT, duration: WINDOW_MS / 1000 });
  const byHand = mapWindow(LIMIT, WINDOW_MS);
  const sync = (loop, target) => async () => nsPerCall(SYNC_CALLS, () => loop(keys, SYNC_CALLS, target));
  const async_ = (loop, target) => () => nsPerAsyncCall(ASYNC_CALLS, () => loop(keys, ASYNC_CALLS, target));
  const measures = {
    map: sync(loops.map, byHand),
    hitSync: sync(loops.hitSync, ours),
    allowSync: sync(loops.allowSync, ours),
    emptyCall: sync(loops.emptyCall, native.emptyCall),
    readKeyCall: sync(loops.readKeyCall, native.readKeyCall),
    dateNow: sync(loops.dateNow, null),
    coreHits: async () => nsPerCall(SYNC_CALLS, () => native.coreHits(POLICY, keys, SYNC_CALLS)),
    hitAwaited: async_(loops.hitAwaited, ours),
    consumeAwaited: async_(loops.consumeAwaited, rlf),
    hitInFlight: async_(loops.hitInFlight, ours),
    consumeInFlight: async_(loops.consumeInFlight, rlf),
    settledAwaited: async_(loops.settledAwaited, ours.hitSync(keys[0])),
    settledInFlight: async_(loops.settledInFlight, ours.hitSync(keys[0])),
  };
  await interleaved(measures, 1);  // warm-up: the JIT, and every key present in every store
  const m = await interleaved(measures);
  // The floor of a synchronous hit: entering the addon and reading the key, then the core's hit.
  m.floor = m.readKeyCall.map((x, i) => x + m.coreHits[i]);
  const ns = (x) => `${median(x).toFixed(1)} ns`;
  // ratio: the median of the per-round ratios, ours / theirs (`at most`) or theirs / ours (`at least`).
  const row = (what, a, b, bound, target) => {
    const ratios = m[a].map((x, i) => (bound === '<=' ? x / m[b][i] : m[b][i] / x));
    return { what: `${name}: ${what}`, ours: ns(m[a]), other: ns(m[b]), ratio: median(ratios), bound, target };
  };
  return [
    row('hitSync / Map window', 'hitSync', 'map', '<=', 1.2),
    row('allowSync / Map window', 'allowSync', 'map', '<=', 1.0),
    row('allowSync / hitSync', 'allowSync', 'hitSync', '<=', 1.0),  // issue 39: never the slower of the two
    row('RLF consume / hit, awaited one by one', 'hitAwaited', 'consumeAwaited', '>=', 2),
    row(`RLF consume / hit, ${IN_FLIGHT} in flight`, 'hitInFlight', 'consumeInFlight', '>=', 2),
    row('floor: an empty N-API call / Map window', 'emptyCall', 'map', '<=', null),
    row('floor: an N-API call reading the key / Map window', 'readKeyCall', 'map', '<=', null),
    row('floor: an N-API call reading the key / allowSync', 'readKeyCall', 'allowSync', '<=', null),
    row("floor: the core's hit (a loop in C++) / Map window", 'coreHits', 'map', '<=', null),
    row("floor: the N-API call reading the key + the core's hit / Map window", 'floor', 'map', '<=', null),
    row('allowSync / that floor', 'allowSync', 'floor', '<=', null),
    row("baseline: Date.now() alone (the Map window's clock read) / Map window", 'dateNow', 'map', '<=', null),
    row('ceiling: RLF consume / a settled Promise, awaited', 'settledAwaited', 'consumeAwaited', '>=', null),
    row(`ceiling: RLF consume / a settled Promise, ${IN_FLIGHT} in flight`, 'settledInFlight', 'consumeInFlight', '>=',
      null),
  ];
}

async function main() {
  const rows = [
    ...(await section('hot key', ['user:42'])),
    ...(await section('10k keys', Array.from({ length: 10_000 }, (_, i) => `user:${i}`))),
  ];
  const table = [['measure', 'ratewarden', 'other', 'ratio', 'target', '']];
  for (const r of rows) {
    const met = r.bound === '<=' ? r.ratio <= r.target : r.ratio >= r.target;
    table.push([r.what, r.ours, r.other, r.ratio.toFixed(2), r.target === null ? '-' : `${r.bound} ${r.target}`,
      r.target === null ? '' : met ? 'met' : 'MISS']);
  }
  const widths = table[0].map((_, c) => Math.max(...table.map((row) => row[c].length)));
  for (const row of table) console.log(row.map((cell, c) => cell.padEnd(widths[c])).join('  ').trimEnd());
  console.log(`\nmemory store, Node ${process.version}; medians of ${Number(process.env.BENCH_ROUNDS || 5)} ` +
    'interleaved rounds; ratio: the median of the per-round ratios. "other" is the Map window or ' +
    'rate-limiter-flexible (RLF); in the floor and ceiling rows, "ratewarden" is the N-API call or the settled Promise.');
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
