// Pacing outbound calls (docs/pacing.md): a partner API allows 10 requests per second, and every call -- from this
// process or any other on the same Redis -- waits its turn instead of being refused.
//
//   node examples/node/pacing.js [store URL]     # memory:// by default; redis://... paces every process on it
'use strict';
const { Limiter, RateLimitTimeoutError } = require('ratewarden');

const store = process.argv[2] ?? 'memory://';
const partner = new Limiter({ policy: '10/second', store, algorithm: 'gcra', burst: 1, prefix: 'example-pacing' });
const sent = []; // when each call left: the partner would see these

// The paced version of a call to the partner (here it only notes the time): each call waits for its slot.
const callPartner = partner.wrap(async (order) => sent.push(performance.now()), { key: 'partner-api' });

async function main() {
  const calls = Array.from({ length: 20 }, (_, i) => callPartner(i)); // one every 100 ms, in order

  // While they wait: a call that cannot wait long is rejected at once, charging nothing, when its slot is further
  // than timeoutMs.
  try {
    await partner.acquire('partner-api', { timeoutMs: 0 });
    console.log('sent');
  } catch (error) {
    if (!(error instanceof RateLimitTimeoutError)) throw error;
    console.log(`gave up: the next slot is ${error.decision.retryAfterMs} ms away`);
  }

  // A wait that is abandoned (a shutdown, a client gone): the slot is given back for the next caller.
  const controller = new AbortController();
  setTimeout(() => controller.abort(), 20);
  await partner.acquire('partner-api', { signal: controller.signal }).catch((error) => console.log(error.name));

  await Promise.all(calls);
  const span = (Math.max(...sent) - Math.min(...sent)) / 1000;
  console.log(`${sent.length} calls at once: the last one ${span.toFixed(1)} s after the first (one every 100 ms)`);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
