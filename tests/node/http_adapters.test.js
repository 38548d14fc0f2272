'use strict';
// ratewarden/express (Express 4 and 5), ratewarden/fastify (Fastify 5) and ratewarden/koa (Koa 2 and 3) over real HTTP on
// 127.0.0.1, on the memory store and on a real redis-server: the same options, the same answers.

const { after, before, describe, test } = require('node:test');
const assert = require('node:assert/strict');
const { execFileSync } = require('node:child_process');

const { FRAMEWORKS, serve } = require('./helpers/frameworks');
const { RedisServer } = require('./helpers/redis_server');

const redis = new RedisServer();
before(() => redis.start());
after(() => redis.close());

let unique = 0;
// A scope of its own per app: tests share one Redis, and every app of a test run is made in one process.
const scoped = (options) => ({ scope: `t${process.pid}-${++unique}`, ...options });

function logs() {
  const lines = [];
  return { lines, logger: { warn: (m) => lines.push(m) } };
}

// Waits (up to 10 s) until `what()` (may be async) holds; the log's lines in the failure's message.
async function until(what, lines) {
  for (let i = 0; i < 500; i++) {
    if (await what()) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  assert.fail(`gave up waiting; the log:\n${lines.join('\n')}`);
}

async function withApp(framework, spec, body) {
  const server = await serve(framework, spec);
  try {
    await body(server);
  } finally {
    await server.close();
  }
}

async function statuses(server, path, n, options = {}) {
  const out = [];
  for (let i = 0; i < n; i++) out.push((await server.request(path, options)).status);
  return out;
}

const json = (body, headers = {}) => ({
  method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body),
});

// RateLimit's t for the item named `name` (draft-8).
function tOf(field, name) {
  const m = new RegExp(`"${name}";r=\\d+;t=(\\d+)`).exec(field);
  return m && Number(m[1]);
}

for (const framework of FRAMEWORKS) {
  for (const storeName of ['memory', 'redis']) {
    describe(`${framework} on ${storeName}`, () => {
      const store = () => (storeName === 'memory' ? 'memory://' : redis.url);
      const route = (path, limit, method = 'GET') => ({ method, path, limits: limit ? [{ store: store(), ...limit }] : [] });

      test('a limit per client address: draft-8 fields, then 429 with Retry-After never before t', () =>
        withApp(framework, { routes: [route('/a', scoped({ limit: 2, window: 60_000 }))] }, async (server) => {
          const first = await server.request('/a');
          assert.equal(first.status, 200);
          assert.equal(first.headers['ratelimit-policy'], '"2-in-1min";q=2;w=60');
          assert.equal(first.headers.ratelimit, '"2-in-1min";r=1;t=60');
          assert.equal(first.headers['retry-after'], undefined);
          assert.equal((await server.request('/a')).status, 200);
          const denied = await server.request('/a');
          assert.equal(denied.status, 429);
          assert.equal(denied.body, 'Too many requests, please try again later.');
          assert.match(denied.headers['content-type'], /^text\/plain/);
          assert.ok(Number(denied.headers['retry-after']) >= tOf(denied.headers.ratelimit, '2-in-1min'));
          assert.equal(tOf(denied.headers.ratelimit, '2-in-1min'), Number(denied.headers['retry-after']));
        }));

      test('keys: a header, a body field, the user (a numeric id), a number from a function, several combined', () =>
        withApp(framework, {
          routes: [
            route('/header', scoped({ limit: 1, key: 'header:x-api-key' })),
            route('/body', scoped({ limit: 1, key: 'body:user' }), 'POST'),
            route('/user', scoped({ limit: 1, key: 'user' })),
            route('/number', scoped({ limit: 1, key: (req) => Number((req.headers || req.request.headers)['x-n']) })),
            route('/both', scoped({ limit: 1, key: ['ip', 'body:user'] }), 'POST'),
          ],
        }, async (server) => {
          const k = (v) => ({ headers: { 'x-api-key': v } });
          assert.deepEqual(await statuses(server, '/header', 2, k('a')), [200, 429]);
          assert.deepEqual(await statuses(server, '/header', 1, k('b')), [200]);
          assert.deepEqual([(await server.request('/body', json({ user: 'ann' }))).status,
            (await server.request('/body', json({ user: 'ann' }))).status,
            (await server.request('/body', json({ user: 42 }))).status], [200, 429, 200]);
          const u = (id) => ({ headers: { 'x-user': String(id) } });
          assert.deepEqual(await statuses(server, '/user', 2, u(7)), [200, 429]);
          assert.deepEqual(await statuses(server, '/user', 1, u(8)), [200]);
          const n = (v) => ({ headers: { 'x-n': String(v) } });
          assert.deepEqual(await statuses(server, '/number', 2, n(12)), [200, 429]);
          assert.deepEqual(await statuses(server, '/number', 1, n(13)), [200]);
          assert.deepEqual([(await server.request('/both', json({ user: 'x' }))).status,
            (await server.request('/both', json({ user: 'x' }))).status,
            (await server.request('/both', json({ user: 'y' }))).status], [200, 429, 200]);
        }));

      test('no key: 400, and why is logged, rate-limited', () => {
        const { lines, logger } = logs();
        return withApp(framework, {
          routes: [
            route('/h', scoped({ key: 'header:x-api-key', logger })),
            route('/nan', scoped({ key: () => NaN, logger })),
            route('/obj', scoped({ key: () => ({}), logger })),
            route('/long', scoped({ key: () => 'x'.repeat(5000), logger })),
          ],
        }, async (server) => {
          for (const path of ['/h', '/h', '/h', '/nan', '/obj', '/long']) {
            const r = await server.request(path);
            const { no_key: wanted } = require('../conformance/refusals.json');
            assert.deepEqual([r.status, r.headers['content-type'], r.body], [wanted.status, wanted.content_type, wanted.body],
              path);
          }
          // One line per limiter within the interval, not one per request.
          assert.equal(lines.length, 4, lines.join('\n'));
          assert.match(lines[0], /no x-api-key header/);
          assert.match(lines[1], /is NaN/);
          assert.match(lines[2], /an object with no string form/);
          assert.match(lines[3], /4096/);
        });
      });

      test('problem+json: the IETF quota-exceeded type and the violated policy', () =>
        withApp(framework, { routes: [route('/p', scoped({ policy: '100/hour; 1/minute', problem: true }))] },
          async (server) => {
            await server.request('/p');
            const r = await server.request('/p');
            assert.equal(r.status, 429);
            assert.equal(r.headers['content-type'], 'application/problem+json');
            const body = JSON.parse(r.body);
            assert.equal(body.type, 'https://iana.org/assignments/http-problem-types#quota-exceeded');
            assert.equal(body.status, 429);
            assert.deepEqual(body['violated-policies'], ['1-in-1min']);
            assert.equal(Number(r.headers['retry-after']), tOf(r.headers.ratelimit, '1-in-1min'));
          }));

      test('shadow mode: decides and says so in the fields, never refuses', () => {
        const { lines, logger } = logs();
        return withApp(framework, { routes: [route('/s', scoped({ limit: 1, shadow: true, logger }))] },
          async (server) => {
            assert.deepEqual(await statuses(server, '/s', 3), [200, 200, 200]);
            const r = await server.request('/s');
            assert.equal(r.headers.ratelimit, '"1-in-1min";r=0;t=60');
            assert.equal(r.headers['retry-after'], undefined);
            assert.equal(lines.length, 1);
            assert.match(lines[0], /shadow mode: a request over 1-in-1min .* would have been refused/);
          });
      });

      test('a shadow denial earlier on the request brings no Retry-After with a later limit that allows', () => {
        if (framework === 'fastify') return undefined;  // one limit per Fastify route
        const { logger } = logs();
        return withApp(framework, {
          app: scoped({ limit: 1, shadow: true, logger, store: store() }),
          routes: [route('/x', scoped({ limit: 10 }))],
        }, async (server) => {
          await server.request('/x');
          const r = await server.request('/x');
          assert.equal(r.status, 200);
          assert.equal(r.headers.ratelimit, '"1-in-1min";r=0;t=60, "10-in-1min";r=8;t=60');
          assert.equal(r.headers['retry-after'], undefined);
        });
      });

      test('count only what matters: countWhen failure counts failed logins only; a function decides too', () =>
        withApp(framework, {
          routes: [
            route('/login', scoped({ limit: 2, key: 'header:x-k', countWhen: 'failure' })),
            route('/fn', scoped({ limit: 1, key: 'header:x-k', countWhen: async () => false })),
          ],
        }, async (server) => {
          const settled = () => new Promise((resolve) => setTimeout(resolve, storeName === 'redis' ? 30 : 0));
          const k = `cw-${unique}`;
          const login = async (fail) => {
            const r = await server.request('/login', { headers: { 'x-k': k, 'x-fail': fail ? '1' : '0' } });
            await settled();  // the refund leaves once the response is sent
            return r.status;
          };
          const got = [];
          for (const fail of [false, false, false, true, false, true, false, true]) got.push(await login(fail));
          // Successes are given back; the two failures use the limit up; then every attempt is refused.
          assert.deepEqual(got, [200, 200, 200, 401, 200, 401, 429, 429]);
          for (let i = 0; i < 3; i++) {
            assert.equal((await server.request('/fn', { headers: { 'x-k': k } })).status, 200);
            await settled();
          }
        }));

      test('skip, sync and async', () =>
        withApp(framework, {
          routes: [
            route('/s1', scoped({ limit: 1, skip: (req) => (req.headers || req.request.headers)['x-admin'] === 'yes' })),
            route('/s2', scoped({ limit: 1, skip: async (req) => (req.headers || req.request.headers)['x-admin'] === 'yes' })),
          ],
        }, async (server) => {
          for (const path of ['/s1', '/s2']) {
            assert.deepEqual(await statuses(server, path, 3, { headers: { 'x-admin': 'yes' } }), [200, 200, 200]);
            assert.deepEqual(await statuses(server, path, 2), [200, 429]);
          }
        }));

      test('two limits with the same policy and key count on their own; a named scope is one count', async () => {
        const same = { limit: 3, window: 60_000, key: 'header:x-k', store: store() };
        const shared = scoped({ limit: 2, window: 60_000, key: 'header:x-k', store: store() });
        const h = { headers: { 'x-k': `k${unique}` } };
        if (framework === 'fastify') {
          // An app-wide limit (the plugin's) and a route's own: each route counts on its own.
          await withApp(framework, {
            app: same, routes: [{ method: 'GET', path: '/x', limits: [] }, { method: 'GET', path: '/y', limits: [same] },
              { method: 'GET', path: '/s1', limits: [shared] }, { method: 'GET', path: '/s2', limits: [shared] }],
          }, async (server) => {
            assert.deepEqual(await statuses(server, '/x', 4, h), [200, 200, 200, 429]);
            assert.deepEqual(await statuses(server, '/y', 4, h), [200, 200, 200, 429]);
            assert.deepEqual([...await statuses(server, '/s1', 1, h), ...await statuses(server, '/s2', 2, h)], [200, 200, 429]);
          });
          return;
        }
        // An app-wide limit and the same again on the route: each counts the request once.
        await withApp(framework, {
          app: same,
          routes: [{ method: 'GET', path: '/x', limits: [same] }, { method: 'GET', path: '/s', limits: [shared, shared] },
            { method: 'GET', path: '/s2', limits: [shared] }],
        }, async (server) => {
          const got = [];
          for (let i = 0; i < 4; i++) {
            const r = await server.request('/x', h);
            got.push(r.status);
            if (i === 0) assert.equal(r.headers.ratelimit, '"3-in-1min";r=2;t=60, "3-in-1min";r=2;t=60');
          }
          assert.deepEqual(got, [200, 200, 200, 429]);
          const s = { headers: { 'x-k': `s${unique}` } };
          // The same scope met twice on /s counts once; /s2 counts on the same counter.
          assert.deepEqual([...await statuses(server, '/s', 1, s), ...await statuses(server, '/s2', 2, s)], [200, 200, 429]);
        });
      });

      if (storeName === 'redis') {
        test('the store hangs, dies, comes back: fail open says so and advertises no quota; fail closed; raise; logged once per change', async () => {
          const dead = new RedisServer();
          await dead.start();
          const url = `${dead.url}?timeout=200ms&connect_timeout=200ms&circuit_backoff=100ms`;
          const { lines, logger } = logs();
          try {
            await withApp(framework, {
              routes: [
                { method: 'GET', path: '/open', limits: [scoped({ limit: 100, store: url, logger })] },
                { method: 'GET', path: '/closed', limits: [scoped({ limit: 100, store: url, onStoreError: 'deny', logger })] },
                { method: 'GET', path: '/raise', limits: [scoped({ limit: 100, store: url, onStoreError: 'raise', logger })] },
              ],
            }, async (server) => {
              assert.equal((await server.request('/open')).headers.ratelimit, '"100-in-1min";r=99;t=60');
              await dead.stop();  // SIGSTOP: connected, but no answer
              const hung = await server.request('/open');
              assert.deepEqual([hung.status, hung.headers['ratelimit-skipped'], hung.headers.ratelimit], [200, 'store-timeout', undefined]);
              await dead.cont();
              await dead.kill();
              for (let i = 0; i < 20; i++) {
                const r = await server.request('/open');
                assert.equal(r.status, 200);
                assert.equal(r.headers['ratelimit-skipped'], 'store-unavailable');
                assert.equal(r.headers.ratelimit, undefined);
                assert.equal(r.headers['ratelimit-policy'], undefined);
              }
              const closed = await server.request('/closed');
              assert.deepEqual([closed.status, closed.headers['retry-after'], closed.headers.ratelimit], [429, '1', undefined]);
              assert.equal((await server.request('/raise')).status, 500);  // the framework's own error handling
              // One line per limiter when the store failed (the core's event: it timed out first), none for raise
              // (the framework's error handling has it), however many requests met the failure.
              await until(() => lines.length >= 2, lines);
              assert.equal(lines.length, 2, lines.join('\n'));
              assert.match(lines[0], /the store failed \(calls fail: .*no reply within the timeout\).*fail open/);
              assert.match(lines[1], /the store failed .*fail closed/);
              // Back: one line (the same for both limiters), counting the requests that met the failure.
              await dead.start();
              await until(async () => {
                await server.request('/open');
                return lines.length > 2;
              }, lines);
              await new Promise((resolve) => setTimeout(resolve, 100));
              assert.equal(lines.length, 3, lines.join('\n'));
              assert.match(lines[2], /the store answers again \(redis:.*requests are limited again; (\d+) request\(s\) met the failure meanwhile/);
              assert.ok(Number(/(\d+) request/.exec(lines[2])[1]) >= 1 + 20 + 1, lines[2]);
            });
          } finally {
            await dead.close();
          }
        });
      }

      if (storeName === 'redis') {
        test('a refund that fails after the response: the answer is delivered, the store\'s failure logged once, nothing hangs', async () => {
          const dead = new RedisServer();
          await dead.start();
          const url = `${dead.url}?timeout=200ms&connect_timeout=200ms&circuit_backoff=100ms`;
          const { lines, logger } = logs();
          // countWhen runs once the response is sent: the first request hangs the store (SIGSTOP) right then, so its
          // refund times out; the second kills it, so its refund finds no server.
          let fault = 'stop';
          const countWhen = async () => {
            if (fault === 'stop') await dead.stop();
            if (fault === 'kill') await dead.kill();
            fault = undefined;
            return false;
          };
          const until = async (what) => {
            for (let i = 0; i < 100 && !what(); i++) await new Promise((resolve) => setTimeout(resolve, 20));
            assert.ok(what(), lines.join('\n'));
          };
          try {
            await withApp(framework, {
              routes: [
                { method: 'GET', path: '/r', limits: [scoped({ limit: 5, store: url, countWhen, logger })] },
                { method: 'GET', path: '/m', limits: [scoped({ limit: 5 })] },
              ],
            }, async (server) => {
              const first = await server.request('/r');
              assert.deepEqual([first.status, first.headers.ratelimit], [200, '"5-in-1min";r=4;t=60']);
              // The refund waits out the store's timeout on its own; the app goes on answering meanwhile.
              assert.equal((await server.request('/m')).status, 200);
              // The store timed out: told once by the core's event, not again for the count not given back.
              await until(() => lines.some((l) => /the store failed \(calls fail: .*no reply within the timeout/.test(l)));
              await dead.cont();
              fault = 'kill';
              assert.equal((await server.request('/r')).status, 200);
              await new Promise((resolve) => setTimeout(resolve, 300));
              // Its hit found the store back, its refund found it dead: the store's changes are told (once a second
              // at most), never a count not given back.
              assert.ok(lines.every((l) => /the store (failed|answers again)/.test(l)), lines.join('\n'));
              assert.equal(lines.filter((l) => /given back/.test(l)).length, 0, lines.join('\n'));
              const after = await server.request('/r');  // fail open, and says so
              assert.deepEqual([after.status, after.headers['ratelimit-skipped']], [200, 'store-unavailable']);
            });
          } finally {
            await dead.close();
          }
        });
      }

      test('adversarial: every connection dropped with 100 requests in flight; the app answers afterwards', () =>
        withApp(framework, { routes: [route('/d', scoped({ limit: 1000, key: 'header:x-k' }))] }, async (server) => {
          const inFlight = server.many('/d', Array.from({ length: 100 }, (_, i) => ({ 'x-k': `drop-${i % 7}` })));
          await new Promise((resolve) => setTimeout(resolve, 5));
          server.dropConnections();
          await inFlight.catch(() => {});  // some were answered, the rest lost their socket
          const r = await server.request('/d', { headers: { 'x-k': 'after' } });
          assert.deepEqual([r.status, r.headers.ratelimit], [200, '"1000-in-1min";r=999;t=60']);
        }));

      test('without a scope, a route\'s limit counts under the route\'s name, whatever the parameters', () => {
        const n = ++unique;
        const options = { limit: 2, key: 'header:x-k', prefix: `rn${process.pid}` };
        return withApp(framework, {
          routes: [route(`/rn${n}/users/:user_id/login`, options, 'POST'), route(`/rn${n}/other`, options, 'POST')],
        }, async (server) => {
          const post = async (path) => (await server.request(path, { method: 'POST', headers: { 'x-k': 'carol' } })).status;
          // Two users' paths are one route: one count; another route with the same limit counts apart.
          assert.deepEqual([await post(`/rn${n}/users/1/login`), await post(`/rn${n}/users/2/login`),
            await post(`/rn${n}/users/3/login`)], [200, 200, 429]);
          assert.deepEqual([await post(`/rn${n}/other`), await post(`/rn${n}/other`), await post(`/rn${n}/other`)],
            [200, 200, 429]);
          if (storeName === 'redis') {  // named as Python's adapters name the same routes (route_names.json)
            const port = new URL(redis.url).port;
            const keys = execFileSync('redis-cli', ['-p', port, 'KEYS', `rn${process.pid}:{/rn${n}/*`]).toString();
            assert.deepEqual(keys.trim().split('\n').sort(), [
              `rn${process.pid}:{/rn${n}/other:carol}:v3:fixed_window:2:60000`,
              `rn${process.pid}:{/rn${n}/users/:user_id/login:carol}:v3:fixed_window:2:60000`,
            ]);
          }
        });
      });

      // Fastify takes one limit per route.
      if (framework !== 'fastify') test('a route\'s limits keep their names (/r, /r#2) whichever of them a request skips', () => {
        const n = ++unique;
        const first = { limit: 5, key: 'header:x-k', skip: (r) => r.headers['x-admin'] === '1' };
        const second = { limit: 2, key: 'header:x-k' };
        return withApp(framework, {
          routes: [{ method: 'GET', path: `/rn${n}/two`, limits: [first, second].map((o) => ({ store: store(), ...o })) }],
        }, async (server) => {
          const get = async (admin) => (await server.request(`/rn${n}/two`,
            { headers: { 'x-k': 'dave', ...(admin ? { 'x-admin': '1' } : {}) } })).status;
          // The second limit counts all three on one counter: skipping the first does not rename it.
          assert.deepEqual([await get(false), await get(true), await get(false)], [200, 200, 429]);
        });
      });

      test('a custom handler answers a denial, with the decision', () => {
        const handler = {
          express4: (req, res, next, d) => res.status(503).send(`wait ${d.retryAfterMs > 0}`),
          express5: (req, res, next, d) => res.status(503).send(`wait ${d.retryAfterMs > 0}`),
          fastify: (request, reply, d) => reply.code(503).send(`wait ${d.retryAfterMs > 0}`),
          koa: (ctx, d) => { ctx.status = 503; ctx.body = `wait ${d.retryAfterMs > 0}`; },
        }[framework.startsWith('koa') ? 'koa' : framework];
        return withApp(framework, { routes: [route('/h', scoped({ limit: 1, handler }))] }, async (server) => {
          await server.request('/h');
          const r = await server.request('/h');
          assert.deepEqual([r.status, r.body, r.headers['retry-after']], [503, 'wait true', '60']);
        });
      });

      test('an async handler or onKeyError that rejects reaches the framework\'s error handling (500)', () => {
        const fails = async () => { throw new Error('the handler failed'); };
        return withApp(framework, { routes: [
          route('/h', scoped({ limit: 1, handler: fails })),
          route('/ha', scoped({ limit: 1, key: async () => 'k', handler: fails })),  // decided after an await
          route('/ke', scoped({ key: 'header:x-none', onKeyError: fails })),
        ] }, async (server) => {
          for (const path of ['/h', '/ha']) {
            assert.equal((await server.request(path)).status, 200);
            assert.equal((await server.request(path)).status, 500, path);
          }
          assert.equal((await server.request('/ke')).status, 500);
          assert.equal((await server.request('/h')).status, 500);  // the process is still there
        });
      });

      test('adversarial: 400 distinct keys at once, then 200 requests in flight for one key with a limit of 50', () =>
        withApp(framework, {
          routes: [route('/k', scoped({ limit: 1, key: 'header:x-k' })), route('/one', scoped({ limit: 50, key: 'header:x-k' }))],
        }, async (server) => {
          const flood = await server.many('/k', Array.from({ length: 400 }, (_, i) => ({ 'x-k': `flood-${unique}-${i}` })));
          assert.deepEqual(flood.filter((s) => s !== 200), []);
          const burst = await server.many('/one', Array.from({ length: 200 }, () => ({ 'x-k': `burst-${unique}` })));
          assert.equal(burst.filter((s) => s === 200).length, 50);
          assert.equal(burst.filter((s) => s === 429).length, 150);
        }));
    });
  }

  test(`${framework}: trust proxy: X-Forwarded-For is the client only when the framework trusts the proxy; IPv6 /56`, () =>
    withApp(framework, { trustProxy: 'loopback', routes: [{ method: 'GET', path: '/', limits: [scoped({ limit: 1 })] }] },
      async (server) => {
        const from = (ip) => ({ headers: { 'x-forwarded-for': ip } });
        assert.deepEqual(await statuses(server, '/', 2, from('2001:db8:abcd:1200::1')), [200, 429]);
        assert.deepEqual(await statuses(server, '/', 1, from('2001:db8:abcd:12ff::2')), [429]);  // the same /56
        assert.deepEqual(await statuses(server, '/', 1, from('2001:db8:abcd:1300::1')), [200]);
        assert.deepEqual(await statuses(server, '/', 1, from('198.51.100.7')), [200]);
      }));
}

test('a scope named by two limits that count differently is refused at start-up', () => {
  const { rateLimit } = require('ratewarden/express');
  const koa = require('ratewarden/koa');
  const url = redis.url;
  rateLimit({ scope: 'ambiguous', limit: 5, store: url });
  assert.throws(() => koa.rateLimit({ scope: 'ambiguous', limit: 6, store: url }), /scope "ambiguous" is named by two/);
  assert.throws(() => rateLimit({ scope: 'ambiguous', limit: 5, key: 'user', store: url }), /count differently/);
  rateLimit({ scope: 'ambiguous', limit: 5, store: url });  // the same count: shared on purpose
});

test('a statusCode that is not an integer from 400 to 599 is refused at start-up, in every adapter', async () => {
  const express = require('ratewarden/express');
  const koa = require('ratewarden/koa');
  const refused = (statusCode) => (e) => e.code === 'ERR_RATEWARDEN_INVALID_ARGUMENT' &&
    e.message === `statusCode must be an integer between 400 and 599, got ${JSON.stringify(statusCode)}`;
  for (const statusCode of [42, 200, 399, 600, 1000, 99.5, 429.5, '429', null]) {
    assert.throws(() => express.rateLimit({ statusCode }), refused(statusCode));
    assert.throws(() => koa.rateLimit({ statusCode }), refused(statusCode));
    for (const [plugin, config] of [[{ statusCode }, {}], [{}, { rateLimit: { statusCode } }]]) {
      const app = require('fastify')();
      await app.register(require('ratewarden/fastify'), plugin);
      assert.throws(() => app.get('/', { config }, async () => 'ok'), refused(statusCode));
      await app.close();
    }
  }
  for (const statusCode of [400, 420, 503, 599]) express.rateLimit({ statusCode });
});

test('fastify: routes added before the plugin are limited too (the app-wide limit, their own, none when false)', async () => {
  const app = require('fastify')();
  app.register(async (child) => {
    child.get('/child', async () => 'child');
  }, { prefix: '/p' });
  app.get('/own', { config: { rateLimit: { limit: 2 } } }, async () => 'own');
  app.get('/free', { config: { rateLimit: false } }, async () => 'free');
  await app.register(require('ratewarden/fastify'), scoped({ limit: 1 }));
  app.get('/late', async () => 'late');
  await app.listen({ port: 0, host: '127.0.0.1' });
  try {
    const base = `http://127.0.0.1:${app.server.address().port}`;
    const statuses = async (calls) => {
      const got = [];
      for (const [method, path] of calls) got.push((await fetch(base + path, { method })).status);
      return got;
    };
    // One count per client across the routes without a limit of their own, whenever they were added.
    assert.deepEqual(await statuses([['GET', '/p/child'], ['GET', '/p/child'], ['GET', '/late']]), [200, 429, 429]);
    // Its own limit, shared by the HEAD route Fastify added, whichever comes first.
    assert.deepEqual(await statuses([['HEAD', '/own'], ['GET', '/own'], ['GET', '/own']]), [200, 200, 429]);
    assert.deepEqual(await statuses([['GET', '/free'], ['GET', '/free'], ['GET', '/nope']]), [200, 200, 404]);
    const own = await fetch(`${base}/own`);
    assert.equal(own.headers.get('ratelimit'), '"2-in-1min";r=0;t=60');
  } finally {
    await app.close();
  }
});

test('fastify: the HEAD route Fastify adds shares its GET route\'s count; routes of child contexts are limited', async () => {
  const app = require('fastify')();
  await app.register(require('ratewarden/fastify'), { global: false });
  await app.register(async (child) => {
    child.get('/x', { config: { rateLimit: scoped({ limit: 2 }) } }, async () => 'ok');
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  try {
    const url = `http://127.0.0.1:${app.server.address().port}/x`;
    const got = [];
    for (const method of ['HEAD', 'GET', 'HEAD', 'GET']) got.push((await fetch(url, { method })).status);
    assert.deepEqual(got, [200, 200, 429, 429]);
  } finally {
    await app.close();
  }
});
