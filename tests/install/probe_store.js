'use strict';
// The Node twin of tests/install/probe_store.py, run in a folder where the tarball was installed: one decision on
// the store at URL, then `ok`, or `error: ` with the error's message; exits 0 either way.
//   node probe_store.js URL
const { Limiter } = require('ratewarden');

async function probe(store) {
  const decision = await new Limiter({ policy: '5/minute', store, prefix: `probe-${process.pid}` }).hit('probe');
  return decision.allowed ? 'ok' : 'denied';
}

probe(process.argv[2]).then(console.log, (error) => console.log(`error: ${error.name}: ${error.message}`));
