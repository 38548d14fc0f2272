// One Node process of the pacing benchmark (bench/pacing/pacing.py):
//
//   client.js LIBRARY REDIS_URL KEY RATE BURST RECORDER_URL START_AT DURATION NAME CALLERS
//
// LIBRARY is `ratewarden` (limiter.acquire: a reservation, then a timer) or `rlf` (rate-limiter-flexible's
// RateLimiterQueue over a RateLimiterRedis of RATE points per second, on ioredis). From START_AT (epoch seconds) each
// of CALLERS async callers loops until START_AT + DURATION: wait for a slot, then GET RECORDER_URL/NAME/caller if the
// deadline has not passed. Prints one JSON line: calls sent, the CPU seconds of the run, and when each sent call's wait
// ended (epoch seconds).
'use strict';
const http = require('node:http');

const [library, redisUrl, key, rate, burst, recorder, startAt, duration, name, callers] = process.argv.slice(2);
const START_MS = Number(startAt) * 1000;
const DEADLINE_MS = START_MS + Number(duration) * 1000;
const agent = new http.Agent({ keepAlive: true, maxSockets: Number(callers) });
let close = () => {};

function ratewardenWaiter() {
  const { Limiter, RateLimitTimeoutError } = require('../..');
  const limiter = new Limiter({ policy: `${rate}/second`, store: redisUrl, algorithm: 'gcra', burst: Number(burst) });
  const wait = async () => {
    try {
      await limiter.acquire(key, { timeoutMs: Math.max(0, DEADLINE_MS - Date.now()) });
      return true;
    } catch (error) {
      if (error instanceof RateLimitTimeoutError) return false;
      throw error;
    }
  };
  return { wait, warmUp: () => limiter.peek(key) }; // a peek charges nothing
}

function rlfWaiter() {
  const Redis = require('ioredis');
  const { RateLimiterRedis, RateLimiterQueue } = require('rate-limiter-flexible');
  const client = new Redis(redisUrl, { enableOfflineQueue: false });
  close = () => client.disconnect();
  const limiter = new RateLimiterRedis({ storeClient: client, keyPrefix: 'rlf', points: Number(rate), duration: 1 });
  const queue = new RateLimiterQueue(limiter);
  const wait = async () => {
    await queue.removeTokens(1, key);
    return true;
  };
  const warmUp = async () => {
    if (client.status !== 'ready') await new Promise((resolve) => client.once('ready', resolve));
    await limiter.get(key); // reads only
  };
  return { wait, warmUp };
}

function get(path) {
  return new Promise((resolve, reject) => {
    http.get(`${recorder}${path}`, { agent }, (res) => {
      res.resume();
      res.on('end', resolve);
    }).on('error', reject);
  });
}

const released = []; // epoch seconds when each sent call's wait ended

async function caller(wait, i) {
  while (Date.now() < DEADLINE_MS && (await wait())) {
    const now = performance.timeOrigin + performance.now();
    if (now >= DEADLINE_MS) break;
    await get(`/${name}/caller${i}`);
    released.push(now / 1000);
  }
}

function cpuSeconds() {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1e6;
}

async function main() {
  const { wait, warmUp } = { ratewarden: ratewardenWaiter, rlf: rlfWaiter }[library]();
  // Warmed up before the start: the store connected, each caller's HTTP connection open and used once.
  await warmUp();
  await Promise.all(Array.from({ length: Number(callers) }, (_, i) => get(`/warmup/${name}/caller${i}`)));
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, START_MS - Date.now())));
  const cpu = cpuSeconds();
  await Promise.all(Array.from({ length: Number(callers) }, (_, i) => caller(wait, i)));
  const cpuRun = cpuSeconds() - cpu;
  agent.destroy();
  close();
  console.log(JSON.stringify({ calls: released.length, cpu_s: cpuRun, released }));
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
