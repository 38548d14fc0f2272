'use strict';
// The adapters benchmark in process: every app of adapters_apps.js (each framework, bare, ratewarden on memory and
// on Redis, the usual peer on memory and on Redis) in this one process, driven with light-my-request (Fastify's own
// inject): no sockets, no HTTP parsing, no load generator competing for the 2 cores — the requests/s of the app
// code alone, so a limiter's cost weighs more here than over HTTP (the harsher measure). 32 requests in flight, as
// wrk's 32 connections. Short measures interleaved many times (bare, every case — in reverse order every other
// round —, bare again), so that the other load of a shared machine falls on both sides of each ratio alike.
//   node bench/node/adapters_inject.js <redis port>      (or BENCH_ONLY=inject through run.js)

const path = require('node:path');
const { build } = require('./adapters_apps');

const inject = require(path.join(__dirname, 'frameworks', 'node_modules', 'light-my-request'));

const ROUNDS = Number(process.env.BENCH_ROUNDS || 15);
const REQUESTS = Number(process.env.BENCH_REQUESTS || 4000);  // per measure
const IN_FLIGHT = 32;
const FRAMEWORKS = (process.env.BENCH_FRAMEWORKS || 'express,fastify,koa').split(',');
const VARIANTS = ['bare', 'fields', 'rw-memory', 'rw-redis', 'peer-memory', 'peer-redis'];
const CASES = ['fields', 'rw-memory', 'rw-redis', 'peer-memory', 'peer-redis'].flatMap((variant) =>
  [false, true].map((denied) => ({ variant, denied })));
const PEERS = { express: 'express-rate-limit', fastify: '@fastify/rate-limit', koa: 'koa-ratelimit' };

const median = (values) => [...values].sort((a, b) => a - b)[values.length >> 1];

function requester(app) {
  if (app.fastify) return (url) => app.fastify.inject({ method: 'GET', url });
  return (url) => inject(app.handler, { method: 'GET', url, remoteAddress: '127.0.0.1' });
}

// Requests/s of `n` requests, `IN_FLIGHT` at a time; each must be answered 200 (or, denied, 429).
async function measure(request, url, denied, n = REQUESTS) {
  const want = denied ? 429 : 200;
  let sent = 0;
  const start = process.hrtime.bigint();
  async function worker() {
    while (sent < n) {
      sent++;
      const res = await request(url);
      if (res.statusCode !== want) throw new Error(`${url}: ${res.statusCode}, wanted ${want}`);
    }
  }
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
  return n / (Number(process.hrtime.bigint() - start) / 1e9);
}

const route = (c) => (c.denied ? '/denied' : '/');
const spread = (ratios) => `${Math.min(...ratios).toFixed(2)}-${Math.max(...ratios).toFixed(2)}`;
const format = (x) => `${(x / 1000).toFixed(1)}k req/s`;

async function run(redisPort) {
  const rows = [];
  for (const f of FRAMEWORKS) {
    const apps = {};
    for (const v of VARIANTS) {
      apps[v] = requester(await build(f, v, redisPort));
      if (v !== 'bare') await apps[v]('/denied');  // the day's one request
      await measure(apps[v], '/', false, 2000);  // warm-up
      if (v !== 'bare') await measure(apps[v], '/denied', true, 2000);
    }
    const bare = [];
    const rps = CASES.map(() => []);
    for (let r = 0; r < ROUNDS; r++) {
      const before = await measure(apps.bare, '/', false);
      const order = CASES.map((c, i) => i);
      if (r % 2) order.reverse();
      for (const i of order) rps[i].push(await measure(apps[CASES[i].variant], route(CASES[i]), CASES[i].denied));
      bare.push((before + await measure(apps.bare, '/', false)) / 2);
    }
    CASES.forEach((c, i) => {
      if (!c.variant.startsWith('rw-')) return;
      const store = c.variant.slice(3);
      const what = `${f}, ${store}, ${c.denied ? 'denied' : 'allowed'}`;
      const overBare = rps[i].map((x, r) => x / bare[r]);
      rows.push({ section: 'inject', what: `${what} over the bare app (rounds ${spread(overBare)})`,
        ours: format(median(rps[i])), peer: format(median(bare)), ratio: median(overBare),
        target: store === 'memory' ? 0.95 : 0.85 });
      const peer = rps[CASES.findIndex((p) => p.variant === `peer-${store}` && p.denied === c.denied)];
      const overPeer = rps[i].map((x, r) => x / peer[r]);
      rows.push({ section: 'inject', what: `${what} over ${PEERS[f]} (rounds ${spread(overPeer)})`,
        ours: format(median(rps[i])), peer: format(median(peer)), ratio: median(overPeer), target: 1 });
      if (store === 'memory') {  // the floor: the bare app sending the same fields (and denial), no limiting
        const floor = rps[CASES.findIndex((p) => p.variant === 'fields' && p.denied === c.denied)];
        const overFloor = rps[i].map((x, r) => x / floor[r]);
        rows.push({ section: 'inject', what: `${what} over the same fields without limiting (rounds ${spread(overFloor)})`,
          ours: format(median(rps[i])), peer: format(median(floor)), ratio: median(overFloor), target: null });
      }
    });
  }
  return rows;
}

module.exports = { run };
