'use strict';
// The hybrid modes against issue 15's targets, from Node, in one run (docs/hybrid.md):
//  - one abusive key flooding a "10/minute" limit on Redis, 100 calls in flight (each caller awaits hit()):
//    denials/s of ?mode=local_first against the memory store (target: within 2x, a ratio >= 0.5) and against
//    ?mode=exact (target >= 20x);
//  - ?mode=async: allowed hits/s on a key with a huge limit against the memory store, 100 in flight (target: 2x);
//  - an HTTP flood of denials through Express (ratewarden/express, a limit of 1 a day already used, so every request
//    is refused) under wrk: requests/s on Redis in local_first against the same app in exact (the issue sets no
//    number), and on the memory store for reference. Each app runs in a process of its own (this file, --serve).
//    BENCH_HTTP=0 skips it.
// Each figure is the median over BENCH_ROUNDS (5) interleaved rounds of BENCH_SECONDS (1) of calls; ratios are
// medians of the per-round ratios. Starts its own redis-server (tests/servers/launch.py) unless given a Redis URL.
//     node bench/node/hybrid.js [redis://host:port]     (after bench/node/setup.sh, or npm ci, built the addon)

const { execFileSync, fork } = require('node:child_process');
const { setTimeout: sleep } = require('node:timers/promises');
const { Limiter, Store } = require('ratewarden');
const { RedisServer } = require('../../tests/node/helpers/redis_server');
const { interleaved } = require('./common');

const SECONDS = Number(process.env.BENCH_SECONDS || 1);
const IN_FLIGHT = 100;

// A hybrid store's knowledge is used once its reset log has been read (stats().syncLagMs >= 0).
async function warm(store) {
  await new Limiter({ policy: '1/hour', store, prefix: 'warm' }).peek('warm-up');
  while (store.stats().syncLagMs < 0) await sleep(1);
  return store;
}

// Counted calls per second over SECONDS, IN_FLIGHT callers each awaiting `limiter.hit(key)` before the next.
async function rate(limiter, key, counted) {
  let n = 0;
  const start = performance.now();
  const stop = start + SECONDS * 1000;
  const caller = async () => {
    while (performance.now() < stop) {
      for (let i = 0; i < 100; i++) if (counted(await limiter.hit(key))) n++;
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, caller));
  return n / ((performance.now() - start) / 1000);
}

// --serve STORE_URL: an Express app whose "/denied" allows 1 request a day per client address, used up before the
// port is sent to the parent: every request of the flood is refused.
function serve(storeUrl) {
  const express = require('express');
  const { rateLimit } = require('ratewarden/express');
  const app = express();
  app.get('/denied', rateLimit({ limit: 1, window: 86_400_000, headers: 'draft-7', store: storeUrl,
    prefix: `bench-http-${process.pid}` }), (req, res) => res.send('hello\n'));
  const server = app.listen(0, '127.0.0.1', async () => {
    const { port } = server.address();
    await (await fetch(`http://127.0.0.1:${port}/denied`)).arrayBuffer(); // the one request of the day
    process.send(port);
  });
}

// Requests/s of wrk on "/denied"; every answer must be a refusal (socket errors, no answers, go to stderr).
function wrkDenied(port) {
  const out = execFileSync('wrk', ['-t1', '-c32', `-d${Math.max(1, Math.round(SECONDS))}s`,
    `http://127.0.0.1:${port}/denied`], { encoding: 'utf8' });
  const count = Number(/(\d+) requests in/.exec(out)[1]);
  const refused = Number((/Non-2xx or 3xx responses: (\d+)/.exec(out) || [0, 0])[1]);
  if (refused !== count) throw new Error(`an allowed answer in the flood of denials:\n${out}`);
  const errors = /Socket errors: .*/.exec(out); // timeouts of a loaded machine: no answers; said, not hidden
  if (errors) console.error(`port ${port}: ${errors[0]}`);
  return Number(/Requests\/sec:\s+([\d.]+)/.exec(out)[1]);
}

// The Express app on each store, flooded by wrk in turn, interleaved rounds: requests/s per store.
async function httpFlood(url) {
  const stores = { httpMemory: 'memory://', httpExact: url, httpLocalFirst: `${url}?mode=local_first` };
  const children = [];
  try {
    const ports = {};
    for (const [name, storeUrl] of Object.entries(stores)) {
      const child = fork(__filename, ['--serve', storeUrl], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
      children.push(child);
      ports[name] = await new Promise((resolve, reject) => {
        child.once('message', resolve);
        child.once('exit', (code) => reject(new Error(`the Express app on ${storeUrl} exited (${code})`)));
      });
      wrkDenied(ports[name]); // warm-up: connections, scripts, the first (store) denial
    }
    console.error('HTTP flood: interleaved rounds of 3 apps...');
    return await interleaved(Object.fromEntries(Object.keys(ports).map((n) => [n, async () => wrkDenied(ports[n])])));
  } finally {
    for (const child of children) child.kill();
  }
}

const median = (values) => [...values].sort((a, b) => a - b)[values.length >> 1];

async function main() {
  // Ours (tests/servers/launch.py, gone with this process however it ends) unless given a URL.
  const redis = process.argv[2] ? { url: process.argv[2], close: async () => {} } : await new RedisServer().start();
  const stores = {
    memory: new Store('memory://'),
    exact: new Store(redis.url),
    local_first: await warm(new Store(`${redis.url}?mode=local_first`)),
    async: await warm(new Store(`${redis.url}?mode=async`)),
  };
  const abused = {};
  for (const [name, store] of Object.entries(stores)) {
    abused[name] = new Limiter({ policy: '10/minute', store, prefix: `bench-${name}` });
    await abused[name].reset('abuser');
    for (let i = 0; i < 11; i++) await abused[name].hit('abuser'); // its 10 used: every call from now on is denied
  }
  const huge = {};
  for (const name of ['memory', 'async']) {
    huge[name] = new Limiter({ policy: '1000000000/minute', store: stores[name], prefix: `bench-${name}` });
    const until = performance.now() + 300; // async: the first calls go to the store; leases follow within a sync
    while (performance.now() < until) await Promise.all(Array.from({ length: IN_FLIGHT }, () => huge[name].hit('hot')));
  }

  const denied = (d) => !d.allowed;
  const allowed = (d) => d.allowed;
  const measures = {
    denyMemory: () => rate(abused.memory, 'abuser', denied),
    denyExact: () => rate(abused.exact, 'abuser', denied),
    denyLocalFirst: () => rate(abused.local_first, 'abuser', denied),
    allowMemory: () => rate(huge.memory, 'hot', allowed),
    allowAsync: () => rate(huge.async, 'hot', allowed),
  };
  console.error(`running interleaved rounds of ${Object.keys(measures).length} measures x ${SECONDS} s...`);
  const m = await interleaved(measures);

  const row = (what, ours, base, target) => {
    const ratio = median(m[ours].map((x, i) => x / m[base][i]));
    return { figure: what, ours: `${(median(m[ours]) / 1000).toFixed(1)}k/s`,
      baseline: `${(median(m[base]) / 1000).toFixed(1)}k/s`, ratio: `${ratio.toFixed(2)}x`,
      target: target === null ? '' : `>= ${target}x`, verdict: target === null ? '' : ratio >= target ? 'ok' : 'MISS' };
  };
  if (process.env.BENCH_HTTP !== '0') Object.assign(m, await httpFlood(redis.url));
  const rows = [
    row(`denials/s, ${IN_FLIGHT} in flight: local_first vs memory`, 'denyLocalFirst', 'denyMemory', 0.5),
    row(`denials/s, ${IN_FLIGHT} in flight: local_first vs exact`, 'denyLocalFirst', 'denyExact', 20),
    row(`denials/s, ${IN_FLIGHT} in flight: exact vs memory (for reference)`, 'denyExact', 'denyMemory', null),
    row(`allowed/s, ${IN_FLIGHT} in flight: async vs memory`, 'allowAsync', 'allowMemory', 0.5),
  ];
  if (m.httpExact) {
    rows.push(row('HTTP denials/s, Express: local_first vs exact', 'httpLocalFirst', 'httpExact', null));
    rows.push(row('HTTP denials/s, Express: local_first vs memory', 'httpLocalFirst', 'httpMemory', null));
  }
  const columns = Object.keys(rows[0]);
  const width = columns.map((c) => Math.max(c.length, ...rows.map((r) => r[c].length)));
  for (const r of [Object.fromEntries(columns.map((c) => [c, c === 'verdict' ? '' : c])), ...rows]) {
    console.log(columns.map((c, i) => (i === 0 ? r[c].padEnd(width[i]) : r[c].padStart(width[i]))).join('  ').trimEnd());
  }
  const s = stores.local_first.stats();
  const a = stores.async.stats();
  console.log(`\nlocal_first: ${s.localDenials} local denials, ${s.storeCalls} store calls, ${s.syncBatches} sync ` +
    `batches; async: ${a.localAllows} local admissions, ${a.storeCalls} store calls, ${a.syncBatches} sync batches`);
  await redis.close();
}

if (process.argv[2] === '--serve') {
  serve(process.argv[3]);
} else {
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
