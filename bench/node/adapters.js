'use strict';
// Issue 18's benchmark: each ratewarden adapter (Express 5, Fastify 5, Koa 2) under wrk over HTTP on 127.0.0.1,
// its throughput over its bare app's (targets: >= 0.95 on the memory store, >= 0.85 on Redis), allowed and denied
// traffic apart, and over the framework's usual limiter on the same store and traffic (express-rate-limit with
// rate-limit-redis, @fastify/rate-limit, koa-ratelimit; target >= 1: at least as fast). Each app runs in its own
// process (adapters_server.js). wrk is the load generator: one thread, 32 connections — light, but it shares the
// 2 cores with the app and Redis, so only ratios measured side by side mean anything.
//
// A round measures, per framework, the bare app, every case (in reverse order every other round), then the bare app
// again: a case's ratio for the round is its requests/s over the mean of those two bare measures (or over the
// peer's in the same round). Rows show the
// median over the rounds and, in brackets, the spread of the per-round ratios.

const { execFileSync, fork } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const ROUNDS = Number(process.env.BENCH_ROUNDS || 7);
const SECONDS = Number(process.env.BENCH_SECONDS || 1);  // wrk takes whole seconds
const FRAMEWORKS = (process.env.BENCH_FRAMEWORKS || 'express,fastify,koa').split(',');
const VARIANTS = ['bare', 'fields', 'rw-memory', 'rw-redis', 'hand-memory', 'hand-redis', 'peer-memory', 'peer-redis'];
const CASES = VARIANTS.slice(1).flatMap((variant) =>
  [false, true].map((denied) => ({ variant, denied })));
const PEERS = { express: 'express-rate-limit', fastify: '@fastify/rate-limit', koa: 'koa-ratelimit' };

const median = (values) => [...values].sort((a, b) => a - b)[values.length >> 1];

// The CPU time (user + system, in clock ticks of 10 ms) the process has used so far.
function cpuTicks(pid) {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return Number(fields[11]) + Number(fields[12]);
}

// { rps, cpuUs }: requests/s, and the app process's CPU time per request (µs). Every answer must be a success, or
// (denied) none.
function measure(server, route, seconds, denied) {
  const before = cpuTicks(server.child.pid);
  const { rps, count } = wrk(server.port, route, seconds, denied);
  return { rps, cpuUs: ((cpuTicks(server.child.pid) - before) * 10000) / count };
}

function wrk(port, route, seconds, denied) {
  const out = execFileSync('wrk', ['-t1', '-c32', `-d${seconds}s`, `http://127.0.0.1:${port}${route}`],
    { encoding: 'utf8' });
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)[1]);
  const count = Number(/(\d+) requests in/.exec(out)[1]);
  const refused = Number((/Non-2xx or 3xx responses: (\d+)/.exec(out) || [0, 0])[1]);
  if (refused !== (denied ? count : 0) || /Socket errors/.test(out)) {
    throw new Error(`port ${port}${route}: ${denied ? 'allowed' : 'refused'} or failed answers under load:\n${out}`);
  }
  return { rps, count };
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
    const rps = {};  // `${framework}:${case index}`: { rps, cpuUs } per round
    for (let r = 0; r < ROUNDS; r++) {
      for (const f of FRAMEWORKS) {
        const bareServer = servers[`${f}:bare`];
        const before = measure(bareServer, '/', SECONDS, false);
        // Every other round in reverse order: no case always runs right after the bare app.
        const order = CASES.map((c, i) => i);
        if (r % 2) order.reverse();
        for (const i of order) {
          const c = CASES[i];
          (rps[`${f}:${i}`] ||= []).push(measure(servers[`${f}:${c.variant}`], route(c), SECONDS, c.denied));
        }
        const after = measure(bareServer, '/', SECONDS, false);
        bare[f].push({ rps: (before.rps + after.rps) / 2, cpuUs: (before.cpuUs + after.cpuUs) / 2 });
      }
    }
    const rows = [];
    // Two rows per comparison: requests/s (what the issue's targets name; on this shared machine it swings with
    // whatever else runs), and the app process's CPU time per request, the same ratio as capacity (the inverse of
    // CPU per request), which the other load on the machine hardly moves.
    const compare = (what, ours, other, target) => {
      const wall = ours.map((x, r) => x.rps / other[r].rps);
      const cpu = ours.map((x, r) => other[r].cpuUs / x.cpuUs);
      rows.push({ section: 'adapters', what: `${what}, requests/s (rounds ${spread(wall)})`,
        ours: format(median(ours.map((x) => x.rps))), peer: format(median(other.map((x) => x.rps))), ratio: median(wall), target });
      rows.push({ section: 'adapters', what: `${what}, 1 / CPU per request (rounds ${spread(cpu)})`,
        ours: `${median(ours.map((x) => x.cpuUs)).toFixed(0)} us`, peer: `${median(other.map((x) => x.cpuUs)).toFixed(0)} us`,
        ratio: median(cpu), target });
    };
    for (const f of FRAMEWORKS) {
      CASES.forEach((c, i) => {
        if (!c.variant.startsWith('rw-')) return;
        const store = c.variant.slice(3);
        const what = `${f}, ${store}, ${c.denied ? 'denied' : 'allowed'}`;
        const ours = rps[`${f}:${i}`];
        compare(`${what} over the bare app`, ours, bare[f], store === 'memory' ? 0.95 : 0.85);
        const peer = rps[`${f}:${CASES.findIndex((p) => p.variant === `peer-${store}` && p.denied === c.denied)}`];
        compare(`${what} over ${PEERS[f]}`, ours, peer, 1);
        // The limiter a user would write by hand (adapters_apps.js, handLimit): the adapter's own cost.
        compare(`${what} over the hand-written limiter`, ours,
          rps[`${f}:${CASES.findIndex((p) => p.variant === `hand-${store}` && p.denied === c.denied)}`], null);
        // The floor: the bare app sending the same fields (and denial), with no limiting — no target of its own.
        if (store === 'memory') {
          compare(`${what} over the same fields without limiting (floor)`, ours,
            rps[`${f}:${CASES.findIndex((p) => p.variant === 'fields' && p.denied === c.denied)}`], null);
        }
      });
    }
    return rows;
  } finally {
    for (const { child } of Object.values(servers)) child.kill();
  }
}

module.exports = { run };
