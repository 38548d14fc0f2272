'use strict';
// Issue 18's benchmark: each ratewarden adapter (Express 5, Fastify 5, Koa 2) under wrk over HTTP on 127.0.0.1,
// its throughput over its bare app's (targets: >= 0.95 on the memory store, >= 0.85 on Redis), allowed and denied
// traffic apart, and over the framework's usual limiter on the same store and traffic (express-rate-limit with
// rate-limit-redis, @fastify/rate-limit, koa-ratelimit; target >= 1: at least as fast). Each app runs in its own
// process (adapters_server.js). wrk is the load generator: one thread, 32 connections — light, but it shares the
// 2 cores with the app and Redis, so only ratios measured side by side mean anything.
//
// A round measures, per framework, the bare app, every case, then the bare app again: a case's ratio for the round
// is its requests/s over the mean of those two bare measures (or over the peer's in the same round). Rows show the
// median over the rounds and, in brackets, the spread of the per-round ratios.

const { execFileSync, fork } = require('node:child_process');
const path = require('node:path');

const ROUNDS = Number(process.env.BENCH_ROUNDS || 5);
const SECONDS = Number(process.env.BENCH_SECONDS || 1);  // wrk takes whole seconds
const FRAMEWORKS = (process.env.BENCH_FRAMEWORKS || 'express,fastify,koa').split(',');
const VARIANTS = ['bare', 'rw-memory', 'rw-redis', 'peer-memory', 'peer-redis'];
const CASES = ['rw-memory', 'rw-redis', 'peer-memory', 'peer-redis'].flatMap((variant) =>
  [false, true].map((denied) => ({ variant, denied })));
const PEERS = { express: 'express-rate-limit', fastify: '@fastify/rate-limit', koa: 'koa-ratelimit' };

const median = (values) => [...values].sort((a, b) => a - b)[values.length >> 1];

// Requests/s; every answer must be a success, or (denied) none.
function wrk(port, route, seconds, denied) {
  const out = execFileSync('wrk', ['-t1', '-c32', `-d${seconds}s`, `http://127.0.0.1:${port}${route}`],
    { encoding: 'utf8' });
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)[1]);
  const count = Number(/(\d+) requests in/.exec(out)[1]);
  const refused = Number((/Non-2xx or 3xx responses: (\d+)/.exec(out) || [0, 0])[1]);
  if (refused !== (denied ? count : 0) || /Socket errors/.test(out)) {
    throw new Error(`port ${port}${route}: ${denied ? 'allowed' : 'refused'} or failed answers under load:\n${out}`);
  }
  return rps;
}

function start(framework, variant, redisPort) {
  const child = fork(path.join(__dirname, 'adapters_server.js'), [framework, variant, String(redisPort)],
    { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  return new Promise((resolve, reject) => {
    child.once('message', (port) => resolve({ child, port }));
    child.once('exit', (code) => reject(new Error(`${framework} ${variant} exited (${code})`)));
  });
}

// The case answers as it should: a 200, or a 429 with Retry-After.
async function checkAnswer(port, c, name) {
  const res = await fetch(`http://127.0.0.1:${port}${c.denied ? '/denied' : '/'}`);
  await res.arrayBuffer();
  const ok = c.denied ? res.status === 429 && res.headers.has('retry-after') : res.status === 200;
  if (!ok) throw new Error(`${name} ${c.variant} ${c.denied ? 'denied' : 'allowed'}: got ${res.status}`);
}

const route = (c) => (c.denied ? '/denied' : '/');
const format = (x) => `${(x / 1000).toFixed(1)}k req/s`;
const spread = (ratios) => `${Math.min(...ratios).toFixed(2)}-${Math.max(...ratios).toFixed(2)}`;

async function run(redisPort) {
  const servers = {};  // `${framework}:${variant}`: { child, port }
  try {
    for (const f of FRAMEWORKS) {
      for (const v of VARIANTS) servers[`${f}:${v}`] = await start(f, v, redisPort);
      for (const c of CASES) {
        const { port } = servers[`${f}:${c.variant}`];
        await checkAnswer(port, c, f);
        wrk(port, route(c), 1, c.denied);  // warm-up: JIT, connections
      }
      wrk(servers[`${f}:bare`].port, '/', 1, false);
    }
    const bare = Object.fromEntries(FRAMEWORKS.map((f) => [f, []]));
    const rps = {};  // `${framework}:${case index}`: requests/s per round
    for (let r = 0; r < ROUNDS; r++) {
      for (const f of FRAMEWORKS) {
        const barePort = servers[`${f}:bare`].port;
        const before = wrk(barePort, '/', SECONDS, false);
        CASES.forEach((c, i) => (rps[`${f}:${i}`] ||= []).push(wrk(servers[`${f}:${c.variant}`].port, route(c), SECONDS, c.denied)));
        bare[f].push((before + wrk(barePort, '/', SECONDS, false)) / 2);
      }
    }
    const rows = [];
    for (const f of FRAMEWORKS) {
      CASES.forEach((c, i) => {
        if (!c.variant.startsWith('rw-')) return;
        const traffic = c.denied ? 'denied' : 'allowed';
        const store = c.variant.slice(3);
        const ours = rps[`${f}:${i}`];
        const overBare = ours.map((x, r) => x / bare[f][r]);
        rows.push({ section: 'adapters', what: `${f}, ${store}, ${traffic}: over the bare app (rounds ${spread(overBare)})`,
          ours: format(median(ours)), peer: format(median(bare[f])), ratio: median(overBare),
          target: store === 'memory' ? 0.95 : 0.85 });
        const peer = rps[`${f}:${CASES.findIndex((p) => p.variant === `peer-${store}` && p.denied === c.denied)}`];
        const overPeer = ours.map((x, r) => x / peer[r]);
        rows.push({ section: 'adapters', what: `${f}, ${store}, ${traffic}: over ${PEERS[f]} (rounds ${spread(overPeer)})`,
          ours: format(median(ours)), peer: format(median(peer)), ratio: median(overPeer), target: 1 });
      });
    }
    return rows;
  } finally {
    for (const { child } of Object.values(servers)) child.kill();
  }
}

module.exports = { run };
