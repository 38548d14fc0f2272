// One process of the pacing fleet (test_pacing_fleet.py), in Node:
//
//   pacing_worker.js STORE_URL KEY POLICY BURST RECORDER_URL START_AT DURATION NAME CALLERS
//
// Warmed up first (the store connected, each caller's HTTP connection open: GET RECORDER_URL/warmup/...). From
// START_AT (epoch seconds) to START_AT + DURATION, CALLERS concurrent async callers each loop: acquire a slot of
// KEY (gcra POLICY with BURST) with a timeout that ends at the deadline, then GET RECORDER_URL/NAME/caller. A caller
// stops at its first RateLimitTimeoutError. Prints one JSON line: calls made, and the process' CPU time in seconds
// (all of it, and during the paced run only).
'use strict';
const http = require('node:http');
const { Limiter, RateLimitTimeoutError } = require('../..');

const [url, key, policy, burst, recorder, startAt, duration, name, callers] = process.argv.slice(2);
const START_MS = Number(startAt) * 1000;
const DEADLINE_MS = START_MS + Number(duration) * 1000;
const agent = new http.Agent({ keepAlive: true, maxSockets: Number(callers) });
const limiter = new Limiter({ policy, store: url, algorithm: 'gcra', burst: Number(burst) });

function get(path) {
  return new Promise((resolve, reject) => {
    http.get(`${recorder}${path}`, { agent }, (res) => {
      res.resume();
      res.on('end', resolve);
    }).on('error', reject);
  });
}

async function caller(i) {
  let calls = 0;
  for (;;) {
    try {
      await limiter.acquire(key, { timeoutMs: Math.max(0, DEADLINE_MS - Date.now()) });
    } catch (error) {
      if (error instanceof RateLimitTimeoutError) return calls;
      throw error;
    }
    await get(`/${name}/caller${i}`);
    calls++;
  }
}

function cpuSeconds() {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1e6;
}

async function main() {
  // Warmed up before the start: the store connected (a peek charges nothing), and every caller's HTTP connection
  // open and used once, so that the first paced calls do no more work than the others.
  await limiter.peek(key);
  await Promise.all(Array.from({ length: Number(callers) }, (_, i) => get(`/warmup/${name}/caller${i}`)));
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, START_MS - Date.now())));
  const cpuStart = cpuSeconds();
  const late = (Date.now() - START_MS) / 1000;
  const counts = await Promise.all(Array.from({ length: Number(callers) }, (_, i) => caller(i)));
  const cpuEnd = cpuSeconds();
  agent.destroy();
  console.log(JSON.stringify({ name, calls: counts.reduce((a, b) => a + b, 0), cpu_s: cpuEnd,
    cpu_paced_s: cpuEnd - cpuStart, late_s: late }));
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
