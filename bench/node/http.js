'use strict';
// Express under wrk: requests/s of the app with each middleware over the bare app's, against express-rate-limit
// (memory store, and rate-limit-redis on ioredis). Each app runs in its own process.

const { execFileSync, fork } = require('node:child_process');
const path = require('node:path');
const { compare, interleaved } = require('./common');

const VARIANTS = ['bare', 'ratewarden-memory', 'erl-memory', 'ratewarden-redis', 'erl-redis'];

function wrk(port, seconds) {
  const out = execFileSync('wrk', ['-t1', '-c32', `-d${seconds}s`, `http://127.0.0.1:${port}/`], { encoding: 'utf8' });
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)[1]);
  if (/Non-2xx/.test(out)) throw new Error(`port ${port}: non-2xx answers under load:\n${out}`);
  return rps;
}

// Resolves with { child, port } once the app listens.
function start(variant, redisPort) {
  const child = fork(path.join(__dirname, 'http_server.js'), [variant, String(redisPort)],
    { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  return new Promise((resolve, reject) => {
    child.once('message', (port) => resolve({ child, port }));
    child.once('exit', (code) => reject(new Error(`${variant} server exited (${code})`)));
  });
}

async function run(redisPort) {
  const servers = {};
  try {
    for (const variant of VARIANTS) {
      servers[variant] = await start(variant, redisPort);
      wrk(servers[variant].port, 1);  // warm-up: JIT, connections
    }
    const m = await interleaved(Object.fromEntries(VARIANTS.map((v) => [v, async () => wrk(servers[v].port, 3)])));
    const format = (x) => `${(x / 1000).toFixed(1)}k req/s`;
    const row = (what, a, b, target = null) => compare('express', what, m[a], m[b], { format, target });
    return [
      row('ratewarden memory / bare app', 'ratewarden-memory', 'bare', 0.9),
      row('express-rate-limit memory / bare app', 'erl-memory', 'bare'),
      row('ratewarden redis / bare app', 'ratewarden-redis', 'bare', 0.8),
      row('express-rate-limit + rate-limit-redis / bare app', 'erl-redis', 'bare'),
      row('ratewarden memory / express-rate-limit memory', 'ratewarden-memory', 'erl-memory', 1),
      row('ratewarden redis / express-rate-limit redis', 'ratewarden-redis', 'erl-redis', 1),
    ];
  } finally {
    for (const { child } of Object.values(servers)) child.kill();
  }
}

module.exports = { run };
