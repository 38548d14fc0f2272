'use strict';
// Runs in a fresh folder where the packed tarball was installed (tests/install/check_install.py): the package works
// as a user gets it — both entry points resolved by name, decisions on memory, and, when their URLs are given, on
// Redis, on Redis over TLS (OpenSSL is inside the prebuilt addon) and on PostgreSQL (the system's libpq.so.5, loaded
// at run time), the Express middleware answering 429, and the figures: the Express limit's counts, and
// ratewarden/prometheus resolved by name (prom-client is not installed here: it is given a registry of its own), and
// ratewarden/opentelemetry's list of instruments (which needs no @opentelemetry/api, not installed here either).
//   node app.js [REDIS_URL REDISS_URL POSTGRES_URL]
const assert = require('node:assert/strict');
const express = require('express');
const { Limiter, limiterStats, version } = require('ratewarden');
const { register } = require('ratewarden/prometheus');
const { rateLimit } = require('ratewarden/express');
const { instruments } = require('ratewarden/opentelemetry');

async function main() {
  const limiter = new Limiter({ policy: '2/minute' });
  assert.deepEqual([1, 2, 3].map(() => limiter.hitSync('k').allowed), [true, true, false]);
  const urls = process.argv.slice(2);
  for (const store of urls) { // one Redis server behind both Redis URLs: a key each
    const shared = new Limiter({ policy: '2/minute', store, prefix: `pack-${process.pid}` });
    const allowed = [];
    for (let i = 0; i < 3; i++) allowed.push((await shared.hit(store)).allowed);
    assert.deepEqual(allowed, [true, true, false], store);
  }
  const app = express();
  app.get('/', rateLimit({ limit: 1, window: 60_000 }), (req, res) => res.send('ok'));
  const server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const url = `http://127.0.0.1:${server.address().port}/`;
  const statuses = [(await fetch(url)).status, (await fetch(url)).status];
  server.close();
  assert.deepEqual(statuses, [200, 429]);
  assert.deepEqual(limiterStats().filter((s) => s.name === '/ 1/60s').map((s) => [s.allowed, s.denied]), [[1, 1]]);
  const families = [];
  register({ registerMetric: (family) => families.push(family.name) });
  assert.ok(families.includes('ratewarden_decisions_total'), families.join(', '));
  assert.ok(instruments().some((i) => i.name === 'ratewarden.decisions' && i.family === 'ratewarden_decisions_total'));
  const addon = Object.keys(require.cache).find((file) => file.endsWith('.node'));
  console.log(`packed ratewarden ${version}: addon ${addon}; memory${urls.length ? ', redis, rediss, postgres' : ''} and ` +
    `Express work (statuses ${statuses.join(', ')})`);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
