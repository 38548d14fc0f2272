'use strict';
// Express under wrk, over HTTP on 127.0.0.1, with Express 4 and with Express 5: the time per request of an app with
// ratewarden (memory store and Redis) over the bare app's, for allowed requests and for denied ones (a limit used
// up for the key), beside issue 21's targets (at most 1.05x on the memory store, 1.15x on Redis); express-rate-limit
// (memory, and rate-limit-redis on ioredis) as a reference. Each app runs in its own process (http_server.js).
//
// All servers run at once. A round measures, for each Express version, the bare app, every case, then the bare app
// again; a case's ratio for the round is its time per request (1 / requests per second) over the mean of those two
// bare measures. Rows show the median over the rounds and, in brackets, their spread.

const { execFileSync, fork } = require('node:child_process');
const path = require('node:path');

const ROUNDS = Number(process.env.BENCH_ROUNDS || 7);
const SECONDS = Number(process.env.BENCH_SECONDS || 1);  // wrk takes whole seconds
const VERSIONS = ['4', '5'];
const VARIANTS = ['bare', 'ratewarden-memory', 'ratewarden-redis', 'erl-memory', 'erl-redis'];
const CASES = [
  { variant: 'ratewarden-memory', denied: false, target: 1.05 },
  { variant: 'ratewarden-memory', denied: true, target: 1.05 },
  { variant: 'ratewarden-redis', denied: false, target: 1.15 },
  { variant: 'ratewarden-redis', denied: true, target: 1.15 },
  { variant: 'erl-memory', denied: false, target: null },
  { variant: 'erl-redis', denied: false, target: null },
];

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

// Resolves with { child, port } once the app listens.
function start(variant, redisPort, version) {
  const child = fork(path.join(__dirname, 'http_server.js'), [variant, String(redisPort), version],
    { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  return new Promise((resolve, reject) => {
    child.once('message', (port) => resolve({ child, port }));
    child.once('exit', (code) => reject(new Error(`${variant} (Express ${version}) exited (${code})`)));
  });
}

// The case answers as it should: a 200 with the fields, or a 429 with Retry-After.
async function checkAnswer(port, c) {
  const res = await fetch(`http://127.0.0.1:${port}${c.denied ? '/denied' : '/'}`);
  await res.arrayBuffer();
  const ok = c.denied ? res.status === 429 && res.headers.has('retry-after') : res.status === 200 && res.headers.has('ratelimit');
  if (!ok) throw new Error(`${c.variant} ${c.denied ? 'denied' : 'allowed'}: got ${res.status} ${[...res.headers]}`);
}

async function run(redisPort) {
  const servers = {};  // `${version}:${variant}`: { child, port }
  try {
    for (const version of VERSIONS) {
      for (const variant of VARIANTS) servers[`${version}:${variant}`] = await start(variant, redisPort, version);
      for (const c of CASES) {
        const { port } = servers[`${version}:${c.variant}`];
        await checkAnswer(port, c);
        wrk(port, c.denied ? '/denied' : '/', 1, c.denied);  // warm-up: JIT, connections
      }
      wrk(servers[`${version}:bare`].port, '/', 1, false);
    }
    const bare = Object.fromEntries(VERSIONS.map((v) => [v, []]));
    const rps = Object.fromEntries(VERSIONS.flatMap((v) => CASES.map((c, i) => [`${v}:${i}`, []])));
    for (let r = 0; r < ROUNDS; r++) {
      for (const version of VERSIONS) {
        const barePort = servers[`${version}:bare`].port;
        const before = wrk(barePort, '/', SECONDS, false);
        CASES.forEach((c, i) => rps[`${version}:${i}`].push(
          wrk(servers[`${version}:${c.variant}`].port, c.denied ? '/denied' : '/', SECONDS, c.denied)));
        bare[version].push((before + wrk(barePort, '/', SECONDS, false)) / 2);
      }
    }
    const format = (x) => `${(x / 1000).toFixed(1)}k req/s`;
    return VERSIONS.flatMap((version) => CASES.map((c, i) => {
      const ours = rps[`${version}:${i}`];
      const ratios = ours.map((x, r) => bare[version][r] / x).sort((a, b) => a - b);
      const what = `Express ${version}, ${c.variant} ${c.denied ? 'denied' : 'allowed'}: time/request over bare ` +
        `(rounds ${ratios[0].toFixed(2)}-${ratios[ratios.length - 1].toFixed(2)})`;
      return { section: 'express', what, ours: format(median(ours)), peer: format(median(bare[version])),
        ratio: median(ratios), target: c.target, atMost: true };
    }));
  } finally {
    for (const { child } of Object.values(servers)) child.kill();
  }
}

module.exports = { run };
