// Per-acquire overhead when no wait is needed, in Node (bench/pacing/pacing.py runs it):
//
//   overhead.js REDIS_URL CALLS ROUNDS
//
// Each operation runs in batches (50 calls on Redis, 20,000 on the memory store), the operations of one store taking
// turns batch by batch so that a loaded machine slows them alike, CALLS x ROUNDS calls each on Redis; prints one JSON
// object: the median over the batches of the µs per call of each. ratewarden: hit, reserve and acquire on Redis and
// on the memory store, under a limit that is never reached; rate-limiter-flexible: RateLimiterRedis.consume and
// RateLimiterQueue's removeTokens over it (ioredis).
'use strict';
const Redis = require('ioredis');
const { RateLimiterRedis, RateLimiterQueue } = require('rate-limiter-flexible');
const { Limiter } = require('../..');

const [redisUrl, calls, rounds] = [process.argv[2], Number(process.argv[3]), Number(process.argv[4])];
const HUGE = 1e9; // never reached: no call waits

function median(values) {
  const v = [...values].sort((a, b) => a - b);
  return v.length % 2 ? v[(v.length - 1) / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
}

async function medians(operations, batch, batches) {
  const samples = Object.fromEntries(Object.keys(operations).map((name) => [name, []]));
  for (let b = 0; b < batches; b++) {
    for (const [name, operation] of Object.entries(operations)) {
      const start = process.hrtime.bigint();
      for (let i = 0; i < batch; i++) await operation();
      samples[name].push(Number(process.hrtime.bigint() - start) / 1e3 / batch);
    }
  }
  return Object.fromEntries(Object.entries(samples).map(([name, values]) => [name, median(values)]));
}

async function main() {
  const client = new Redis(redisUrl);
  await new Promise((resolve) => client.once('ready', resolve));
  const rlf = new RateLimiterRedis({ storeClient: client, keyPrefix: 'overhead-rlf', points: HUGE, duration: 3600 });
  const queue = new RateLimiterQueue(rlf);
  const redisOps = {};
  const memoryOps = {};
  for (const [store, url] of [['redis', redisUrl], ['memory', 'memory://']]) {
    const limiter = new Limiter({ policy: `${HUGE}/hour`, store: url, algorithm: 'gcra', prefix: 'overhead' });
    const group = store === 'redis' ? redisOps : memoryOps;
    group[`ratewarden ${store} hit`] = () => limiter.hit('k');
    group[`ratewarden ${store} reserve`] = () => limiter.reserve('k');
    group[`ratewarden ${store} acquire`] = () => limiter.acquire('k');
  }
  redisOps['rlf consume'] = () => rlf.consume('k');
  redisOps['rlf RateLimiterQueue.removeTokens'] = () => queue.removeTokens(1, 'k');
  const figures = { ...await medians(redisOps, 50, (calls * rounds) / 50),
    ...await medians(memoryOps, 20000, 2 * rounds + 1) };
  client.disconnect();
  console.log(JSON.stringify(figures));
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
