'use strict';
// Deny lists, allow lists and blockDuration (docs/key-lists.md) in every Node adapter over real HTTP on 127.0.0.1,
// on the memory store and on Redis; and a client blocked by a Python process refused by a Node app on one Redis.

const { after, before, describe, test } = require('node:test');
const assert = require('node:assert/strict');
const { execFileSync } = require('node:child_process');
const path = require('node:path');

const { KeyList, Store } = require('ratewarden');
const { FRAMEWORKS, serve } = require('./helpers/frameworks');
const { RedisServer } = require('./helpers/redis_server');

const redis = new RedisServer();
before(() => redis.start());
after(() => redis.close());

let unique = 0;

async function withApp(framework, spec, body) {
  const server = await serve(framework, spec);
  try {
    await body(server);
  } finally {
    await server.close();
  }
}

const as = (user) => ({ headers: { 'x-key': user } });

for (const framework of FRAMEWORKS) {
  for (const storeName of ['memory', 'redis']) {
    describe(`${framework} on ${storeName}: lists`, () => {
      test('an allowed client skips the limit, a denied one gets 403, a refused one stays blocked', async () => {
        const store = new Store(storeName === 'memory' ? 'memory://' : redis.url);
        const n = ++unique;
        const allowList = new KeyList({ name: `allowed-${process.pid}-${n}`, store });
        const denyList = new KeyList({ name: `denied-${process.pid}-${n}`, store });
        await allowList.add('partner');
        await denyList.add('mallory');
        const limit = { store, scope: `lists${process.pid}-${n}`, limit: 2, window: 60_000, key: 'header:x-key',
          allowList, denyList, blockDuration: 400 };
        await withApp(framework, { routes: [{ method: 'GET', path: '/a', limits: [limit] }] }, async (server) => {
          for (let i = 0; i < 5; i++) assert.equal((await server.request('/a', as('partner'))).status, 200);
          const denied = await server.request('/a', as('mallory'));
          const { deny_listed: wanted } = require('../conformance/refusals.json');
          assert.deepEqual([denied.status, denied.headers['content-type'], denied.body],
            [wanted.status, wanted.content_type, wanted.body]);
          assert.equal(denied.headers.ratelimit, undefined);
          assert.equal((await server.request('/a', as('bob'))).status, 200);
          assert.equal((await server.request('/a', as('bob'))).status, 200);
          assert.equal((await server.request('/a', as('bob'))).status, 429);  // the limit: starts a 400 ms block
          await limitOf(store, limit).reset(`${limit.scope}:bob`);  // the limit itself forgets bob ...
          const blocked = await server.request('/a', as('bob'));     // ... the block does not
          assert.equal(blocked.status, 429);
          assert.ok(Number(blocked.headers['retry-after']) >= 1);
          await new Promise((r) => setTimeout(r, 450));
          assert.equal((await server.request('/a', as('bob'))).status, 200);
          await denyList.remove('mallory');
          assert.equal((await server.request('/a', as('mallory'))).status, 200);
        });
      });
    });
  }
}

// The limit's own counter, to take it out of the way (the Limiter the middleware uses: same store, rates, prefix).
function limitOf(store, { limit, window }) {
  const { Limiter } = require('ratewarden');
  return new Limiter({ policy: `${limit}/${window}ms`, store });
}

test('a client deny-listed by a Python process is refused by a Node app on the same Redis', async () => {
  const name = `denied-py-${process.pid}`;
  const python = process.env.RATEWARDEN_PYTHON || path.join(__dirname, '..', '..', '.venv', 'bin', 'python');
  execFileSync(python, ['-c', `import sys, ratewarden; ratewarden.KeyList(sys.argv[1], sys.argv[2]).add("eve")`,
    name, redis.url]);
  const denyList = new KeyList({ name, store: redis.url });
  await withApp('express5', { routes: [{ method: 'GET', path: '/a', limits: [{ store: redis.url, scope: name,
    limit: 10, window: 60_000, key: 'header:x-key', denyList }] }] }, async (server) => {
    assert.equal((await server.request('/a', as('eve'))).status, 403);
    assert.equal((await server.request('/a', as('adam'))).status, 200);
  });
});
