'use strict';
// The Redis store with 100, 1,000 and 10,000 calls in flight: decisions/s against RateLimiterRedis
// (rate-limiter-flexible on ioredis, running its own script), and against redis-benchmark sending the very EVALSHA
// a decision sends: with -c 50 -P 16 (800 in flight), and with -c 1 -P 100 — the same 100 in flight on one
// connection from a client that costs nothing, the floor of the 100-in-flight figures on this machine. Beside each
// rate, where the CPU goes: redis-server's share of a core during the measure, and the CPU time per decision of
// redis-server and of this Node process (every thread). When redis-server is the bottleneck, the cost of the scripts
// decides the ratio.

const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const Redis = require('ioredis');
const { RateLimiterRedis } = require('rate-limiter-flexible');
const { Limiter } = require('ratewarden');
const { captureEvalsha, compare, interleaved } = require('./common');

const IN_FLIGHT = (process.env.BENCH_IN_FLIGHT || '100,1000,10000').split(',').map(Number);
const TARGET = 1.5;  // issue 13 (issue 11 asked 1.2): with 100 calls in flight
const RATE_TARGET = 100_000;  // issue 13: decisions/s with 100 calls in flight, on this 2-core machine
const SECONDS = Number(process.env.BENCH_SECONDS || 2);
const KEYS = 100_000;
const POLICY = '1000000000/hour';  // everything is allowed: every decision writes

// CPU time (µs) of a process, from /proc.
function cpuUs(pid) {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) * (1e6 / 100);  // utime + stime, in clock ticks of 10 ms
}

// `inFlight` callers, each awaiting its call before making the next, for SECONDS.
async function measure(call, inFlight, redisPid) {
  let count = 0;
  const redis0 = cpuUs(redisPid);
  const node0 = process.cpuUsage();
  const start = performance.now();
  const stop = start + SECONDS * 1000;
  const caller = async () => {
    while (performance.now() < stop) {
      await call(`bench${(Math.random() * KEYS) | 0}`);
      count++;
    }
  };
  await Promise.all(Array.from({ length: inFlight }, caller));
  const seconds = (performance.now() - start) / 1000;
  const node = process.cpuUsage(node0);
  const redis = cpuUs(redisPid) - redis0;
  return { rate: count / seconds, redisShare: redis / 1e6 / seconds, redisUs: redis / count,
    nodeUs: (node.user + node.system) / count };
}

function redisBenchmark(port, evalsha, connections, pipeline) {
  const key = evalsha[3].replace(/\{[^}]*\}/, '{bench__rand_int__}');
  const args = ['-h', '127.0.0.1', '-p', String(port), '-c', String(connections), '-P', String(pipeline),
    '-n', '400000', '-r', String(KEYS), '--csv', ...evalsha.slice(0, 3), key, ...evalsha.slice(4)];
  const csv = execFileSync('redis-benchmark', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  const line = csv.split('\n').find((l) => l.startsWith('"EVALSHA'));
  return Number(line.split('","')[1]);
}

async function run(port) {
  const url = `redis://127.0.0.1:${port}?timeout=30s`;  // 10,000 in flight queue up behind each other
  const ours = new Limiter({ policy: POLICY, store: url });
  const evalsha = await captureEvalsha(port, () => ours.hit('warm-up'));
  const client = new Redis({ port, host: '127.0.0.1', enableOfflineQueue: true });
  const redisPid = Number((await client.info('server')).match(/process_id:(\d+)/)[1]);
  const peer = new RateLimiterRedis({ storeClient: client, points: 1e9, duration: 3600, keyPrefix: 'rlflx' });
  await peer.consume('warm-up');
  const measures = {
    redisBenchmark: async () => redisBenchmark(port, evalsha, 50, 16),
    redisBenchmark100: async () => redisBenchmark(port, evalsha, 1, 100),
  };
  for (const n of IN_FLIGHT) {
    measures[`ours${n}`] = () => measure((k) => ours.hit(k), n, redisPid);
    measures[`peer${n}`] = () => measure((k) => peer.consume(k), n, redisPid);
  }
  const m = await interleaved(measures);
  client.disconnect();

  const rate = (x) => `${(x / 1000).toFixed(1)}k/s`;
  const percent = (x) => `${(100 * x).toFixed(0)}%`;
  const us = (x) => `${x.toFixed(1)} µs`;
  const field = (values, name) => values.map((v) => v[name]);
  const rows = [];
  for (const n of IN_FLIGHT) {
    const [o, p] = [m[`ours${n}`], m[`peer${n}`]];
    rows.push(compare('redis', `hit vs RateLimiterRedis, ${n} in flight`, field(o, 'rate'), field(p, 'rate'),
      { format: rate, target: n === 100 ? TARGET : null }));
    rows.push(compare('redis', `  redis-server CPU share (of one core)`, field(o, 'redisShare'), field(p, 'redisShare'),
      { format: percent }));
    rows.push(compare('redis', `  redis-server CPU per decision`, field(o, 'redisUs'), field(p, 'redisUs'),
      { format: us, lowerIsBetter: true }));
    rows.push(compare('redis', `  Node CPU per decision (all threads)`, field(o, 'nodeUs'), field(p, 'nodeUs'),
      { format: us, lowerIsBetter: true }));
  }
  const rates = field(m.ours100 || [], 'rate').sort((a, b) => a - b);
  if (rates.length) {  // an absolute target: the median rate over the figure
    const median = rates[rates.length >> 1];
    rows.push({ section: 'redis', what: 'hit, 100 in flight, decisions/s over the issue\'s 100k/s', ours: rate(median),
      peer: rate(RATE_TARGET), ratio: median / RATE_TARGET, target: 1 });
  }
  rows.push(compare('redis', `hit (${IN_FLIGHT[0]} in flight) vs redis-benchmark -c 50 -P 16, same EVALSHA`,
    field(m[`ours${IN_FLIGHT[0]}`], 'rate'), m.redisBenchmark, { format: rate, target: 0.8 }));
  if (m.ours100) {
    rows.push(compare('redis', 'hit (100 in flight) vs redis-benchmark -c 1 -P 100 (the same 100 in flight, floor)',
      field(m.ours100, 'rate'), m.redisBenchmark100, { format: rate }));
  }
  return rows;
}

module.exports = { run };
