'use strict';
// The memory store: ns per decision over 1000 keys, against RateLimiterMemory (rate-limiter-flexible).

const { RateLimiterMemory } = require('rate-limiter-flexible');
const { Limiter } = require('ratewarden');
const { compare, interleaved } = require('./common');

const KEYS = Array.from({ length: 1000 }, (_, i) => `user${i}`);
const N = 500_000;

function nsPer(start) {
  return Number(process.hrtime.bigint() - start) / N;
}

function syncLoop(call) {
  const start = process.hrtime.bigint();
  for (let i = 0; i < N; i++) call(KEYS[i % KEYS.length]);
  return nsPer(start);
}

// 1000 Promises in flight, then awaited together: the cheapest way to use a Promise API.
async function inFlight(call) {
  const start = process.hrtime.bigint();
  const pending = new Array(KEYS.length);
  for (let i = 0; i < N; i += KEYS.length) {
    for (let j = 0; j < KEYS.length; j++) pending[j] = call(KEYS[j]);
    await Promise.all(pending);
  }
  return nsPer(start);
}

// Awaited one by one, as in a request handler.
async function awaited(call) {
  const start = process.hrtime.bigint();
  for (let i = 0; i < N; i++) await call(KEYS[i % KEYS.length]);
  return nsPer(start);
}

async function run() {
  const ours = new Limiter({ policy: '1000000000/hour' });
  const peer = new RateLimiterMemory({ points: 1e9, duration: 3600 });
  const m = await interleaved({
    hitSync: async () => syncLoop((k) => ours.hitSync(k)),
    hit: () => inFlight((k) => ours.hit(k)),
    consume: () => inFlight((k) => peer.consume(k)),
    hitAwaited: () => awaited((k) => ours.hit(k)),
    consumeAwaited: () => awaited((k) => peer.consume(k)),
  });
  const row = (what, a, b, target) =>
    compare('memory', what, m[a], m[b], { format: (ns) => `${ns.toFixed(0)} ns`, target, lowerIsBetter: true });
  return [
    row('hitSync vs consume (1000 in flight)', 'hitSync', 'consume', 2),
    row('hitSync vs consume (awaited one by one)', 'hitSync', 'consumeAwaited', 2),
    row('hit vs consume (1000 in flight)', 'hit', 'consume', 1),
    row('hit vs consume (awaited one by one)', 'hitAwaited', 'consumeAwaited', 1),
  ];
}

module.exports = { run };
