'use strict';
// The Redis store with 100 calls in flight: decisions/s against RateLimiterRedis (rate-limiter-flexible on
// ioredis), and against redis-benchmark sending the very EVALSHA a decision sends (-c 50 -P 16).

const { execFileSync } = require('node:child_process');
const Redis = require('ioredis');
const { RateLimiterRedis } = require('rate-limiter-flexible');
const { Limiter } = require('ratewarden');
const { captureEvalsha, compare, interleaved } = require('./common');

const IN_FLIGHT = 100;
const SECONDS = 2;
const KEYS = 100_000;
const POLICY = '1000000000/hour';  // everything is allowed: every decision writes

async function decisionsPerSecond(call) {
  let count = 0;
  const start = performance.now();
  const stop = start + SECONDS * 1000;
  const worker = async () => {
    while (performance.now() < stop) {
      await call(`bench${(Math.random() * KEYS) | 0}`);
      count++;
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
  return count / ((performance.now() - start) / 1000);
}

function redisBenchmark(port, evalsha) {
  const key = evalsha[3].replace(/\{[^}]*\}/, '{bench__rand_int__}');
  const args = ['-h', '127.0.0.1', '-p', String(port), '-c', '50', '-P', '16', '-n', '400000', '-r', String(KEYS),
    '--csv', ...evalsha.slice(0, 3), key, ...evalsha.slice(4)];
  const csv = execFileSync('redis-benchmark', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  const line = csv.split('\n').find((l) => l.startsWith('"EVALSHA'));
  return Number(line.split('","')[1]);
}

async function run(port) {
  const url = `redis://127.0.0.1:${port}`;
  const ours = new Limiter({ policy: POLICY, store: url });
  const evalsha = await captureEvalsha(port, () => ours.hit('warm-up'));
  const client = new Redis({ port, host: '127.0.0.1', enableOfflineQueue: true });
  const peer = new RateLimiterRedis({ storeClient: client, points: 1e9, duration: 3600, keyPrefix: 'rlflx' });
  await peer.consume('warm-up');
  const m = await interleaved({
    ours: () => decisionsPerSecond((k) => ours.hit(k)),
    peer: () => decisionsPerSecond((k) => peer.consume(k)),
    redisBenchmark: async () => redisBenchmark(port, evalsha),
  });
  client.disconnect();
  const format = (x) => `${(x / 1000).toFixed(1)}k/s`;
  return [
    compare('redis', 'hit vs RateLimiterRedis, 100 in flight', m.ours, m.peer, { format, target: 1 }),
    compare('redis', 'hit vs redis-benchmark -c 50 -P 16, same EVALSHA', m.ours, m.redisBenchmark, { format, target: 0.8 }),
  ];
}

module.exports = { run };
