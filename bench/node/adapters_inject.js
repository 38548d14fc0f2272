'use strict';
// The adapters benchmark in process: every app of adapters_apps.js (each framework, bare, the fields floor,
// ratewarden, the hand-written limiter and the usual peer, on memory and on Redis) in this one process, driven with
// light-my-request (Fastify's own inject): no sockets, no HTTP parsing, no load generator competing for the 2 cores
// — the requests/s of the app code alone, so a limiter's cost weighs more here than over HTTP (the harsher measure).
// On Redis, 32 requests in flight, as wrk's 32 connections; on the memory store (and the bare app), one at a time:
// light-my-request starts the requests in flight in one tick, and an asynchronous middleware (express-rate-limit's,
// koa-ratelimit's) then interleaves them — a bare Express app with one microtask hop in a middleware measured 20%
// faster than without at 32 in flight, a scheduling effect that a server's sockets do not give. Many short measures
// of each app, interleaved (in reverse order every other round); each app's figure is its best measure, as timeit
// takes the least of its repeats: what its code costs when nothing else on this shared machine runs (a median here
// swings by ±30% from one run to the next).
//   node bench/node/adapters_inject.js <redis port>      (or BENCH_ONLY=inject through run.js)

const path = require('node:path');
const { build } = require('./adapters_apps');

const inject = require(path.join(__dirname, 'frameworks', 'node_modules', 'light-my-request'));

const ROUNDS = Number(process.env.BENCH_ROUNDS || 20);
const REQUESTS = Number(process.env.BENCH_REQUESTS || 2000);  // per measure: a few collections each
const IN_FLIGHT = { memory: 1, redis: 32 };
const FRAMEWORKS = (process.env.BENCH_FRAMEWORKS || 'express,fastify,koa').split(',');
const VARIANTS = ['bare', 'fields', 'rw-memory', 'rw-redis', 'hand-memory', 'hand-redis', 'peer-memory', 'peer-redis'];
const CASES = VARIANTS.slice(1).flatMap((variant) =>
  [false, true].map((denied) => ({ variant, denied })));
const PEERS = { express: 'express-rate-limit', fastify: '@fastify/rate-limit', koa: 'koa-ratelimit' };


function requester(app) {
  if (app.fastify) return (url) => app.fastify.inject({ method: 'GET', url });
  return (url) => inject(app.handler, { method: 'GET', url, remoteAddress: '127.0.0.1' });
}

// Requests/s of `n` requests of an app of `variant`, IN_FLIGHT of its store at a time; each must be answered 200
// (or, denied, 429).
async function measure(request, variant, url, denied, n = REQUESTS) {
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
  await Promise.all(Array.from({ length: IN_FLIGHT[variant.endsWith('redis') ? 'redis' : 'memory'] }, worker));
  return n / (Number(process.hrtime.bigint() - start) / 1e9);
}

const route = (c) => (c.denied ? '/denied' : '/');
const format = (x) => `${(x / 1000).toFixed(1)}k req/s`;

async function run(redisPort) {
  const rows = [];
  for (const f of FRAMEWORKS) {
    const apps = {};
    for (const v of VARIANTS) {
      apps[v] = requester(await build(f, v, redisPort));
      if (v !== 'bare') await apps[v]('/denied');  // the day's one request
      await measure(apps[v], v, '/', false, 2000);  // warm-up
      if (v !== 'bare') await measure(apps[v], v, '/denied', true, 2000);
    }
    const rounds = {};  // `${variant}:${url}`: requests/s of each measure
    const measured = [['bare', '/', false], ...CASES.map((c) => [c.variant, route(c), c.denied])];
    for (let r = 0; r < ROUNDS; r++) {
      const order = r % 2 ? [...measured].reverse() : measured;  // no app always runs right after another
      for (const [v, url, denied] of order) {
        (rounds[`${v}:${url}`] ||= []).push(await measure(apps[v], v, url, denied));
      }
    }
    // The best (highest) requests/s of each app over the rounds: what its code costs when nothing else runs.
    const best = (v, url) => Math.max(...rounds[`${v}:${url}`]);
    const bare = best('bare', '/');
    const row = (what, ours, other, target) => rows.push({ section: 'inject', what, ours: format(ours),
      peer: format(other), ratio: ours / other, target });
    CASES.forEach((c) => {
      if (!c.variant.startsWith('rw-')) return;
      const store = c.variant.slice(3);
      const url = route(c);
      const what = `${f}, ${store}, ${c.denied ? 'denied' : 'allowed'}`;
      const ours = best(c.variant, url);
      row(`${what} over the bare app`, ours, bare, store === 'memory' ? 0.95 : 0.85);
      row(`${what} over the hand-written limiter`, ours, best(`hand-${store}`, url), null);
      row(`${what} over ${PEERS[f]}`, ours, best(`peer-${store}`, url), 1);
      // The floor: the bare app sending the same fields (and denial), no limiting.
      if (store === 'memory') row(`${what} over the same fields without limiting`, ours, best('fields', url), null);
    });
  }
  return rows;
}

module.exports = { run };
