// One Node member of the hybrid fleet (test_hybrid_fleet.py): `URL ALGORITHM POLICY KEY CALLERS HITS` opens the
// store (a hybrid mode waits for its first read of the reset log), prints `ready`, waits for a line on stdin, then
// keeps CALLERS calls in flight (each caller awaits HITS hits in turn) on KEY and prints one JSON line: allowed,
// local_denials, local_allows, store_calls.
'use strict';
const readline = require('node:readline');
const { setTimeout: sleep } = require('node:timers/promises');
const { Limiter, Store } = require('../..');

async function main() {
  const [url, algorithm, policy, key, callers, hits] = process.argv.slice(2);
  const store = new Store(url);
  const limiter = new Limiter({ policy, store, algorithm });
  await limiter.peek(`${key}-warm-up`); // starts a hybrid store's background rounds
  const deadline = Date.now() + 10000;
  while (store.stats().syncLagMs < 0 && Date.now() < deadline) await sleep(1);

  const lines = readline.createInterface({ input: process.stdin });
  const go = new Promise((resolve) => lines.once('line', resolve));
  console.log('ready');
  await go;
  lines.close();
  const caller = async () => {
    let allowed = 0;
    for (let i = 0; i < Number(hits); i++) if ((await limiter.hit(key)).allowed) allowed++;
    return allowed;
  };
  const allowed = (await Promise.all(Array.from({ length: Number(callers) }, caller))).reduce((a, b) => a + b, 0);
  const s = store.stats();
  console.log(JSON.stringify({ allowed, local_denials: s.localDenials, local_allows: s.localAllows,
    store_calls: s.storeCalls }));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
