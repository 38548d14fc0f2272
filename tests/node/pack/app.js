'use strict';
// Runs in a fresh folder where the packed tarball was installed (scripts/test_node.sh): the package works as a
// user gets it, addon built on install, both entry points resolved by name.
const assert = require('node:assert/strict');
const express = require('express');
const { Limiter, version } = require('ratewarden');
const { rateLimit } = require('ratewarden/express');

async function main() {
  const limiter = new Limiter({ policy: '2/minute' });
  assert.deepEqual([1, 2, 3].map(() => limiter.hitSync('k').allowed), [true, true, false]);
  const app = express();
  app.get('/', rateLimit({ limit: 1, window: 60_000 }), (req, res) => res.send('ok'));
  const server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const url = `http://127.0.0.1:${server.address().port}/`;
  const statuses = [(await fetch(url)).status, (await fetch(url)).status];
  server.close();
  assert.deepEqual(statuses, [200, 429]);
  console.log(`packed ratewarden ${version}: installed, built and working (statuses ${statuses.join(', ')})`);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
