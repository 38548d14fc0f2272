'use strict';
// ratewarden/express over real HTTP on 127.0.0.1.

const { after, before, describe, test } = require('node:test');
const assert = require('node:assert/strict');
const express = require('express');

const { Store, TestClock, codes } = require('ratewarden');
const { rateLimit, clientKey } = require('ratewarden/express');
const { listen } = require('./helpers/http');
const { RedisServer } = require('./helpers/redis_server');

const ok = (req, res) => res.send('ok');
const byUser = (req) => req.get('x-user');

async function withApp(setup, body) {
  const app = express();
  setup(app);
  const server = await listen(app);
  try {
    await body(server);
  } finally {
    await server.close();
  }
}

function statuses(server, path, n, headers = {}) {
  return Array.from({ length: n }).reduce(
    async (acc) => [...(await acc), (await server.request(path, { headers })).status],
    Promise.resolve([]),
  );
}

test('limits per route and per key', () =>
  withApp((app) => {
    app.get('/a', rateLimit({ limit: 2, window: 60_000, key: byUser }), ok);
    app.get('/b', rateLimit({ limit: 1, window: 60_000, key: byUser }), ok);
  }, async (server) => {
    assert.deepEqual(await statuses(server, '/a', 3, { 'x-user': 'alice' }), [200, 200, 429]);
    assert.deepEqual(await statuses(server, '/a', 3, { 'x-user': 'bob' }), [200, 200, 429]);
    assert.deepEqual(await statuses(server, '/b', 2, { 'x-user': 'alice' }), [200, 429]);
  }));

test('stacked limiters each count once; the same limiter met twice counts once', () =>
  withApp((app) => {
    const global = rateLimit({ limit: 3, window: 60_000, key: byUser, headers: 'draft-7' });
    const router = express.Router();
    router.use(global);  // the same instance again, on the router
    router.get('/r', rateLimit({ limit: 10, window: 60_000, key: byUser, headers: 'draft-7' }), ok);
    app.use(global);
    app.use('/x', router);
  }, async (server) => {
    const first = await server.request('/x/r', { headers: { 'x-user': 'u' } });
    // The tighter of the two (2 left of 3, against 9 of 10) is the one reported.
    assert.equal(first.headers.ratelimit, 'limit=3, remaining=2, reset=60');
    assert.deepEqual(await statuses(server, '/x/r', 3, { 'x-user': 'u' }), [200, 200, 429]);
  }));

// Express matches mount paths in either case and with parameters: a route's limit counts under the paths its
// routers were mounted on, whatever the request's spelling of them, so no spelling gets a count (or figures) of its
// own.
for (const [version, expressOf] of [['Express 4', () => require('express4')], ['Express 5', () => express]]) {
  test(`${version}: a route under routers counts under their mount paths, not the request's spelling`, async () => {
    const e = expressOf();
    const app = e();
    const limit = rateLimit({ limit: 3, window: 60_000 });
    const api = e.Router();
    api.post('/login', limit, ok);
    app.use('/api', api);
    const tenant = e.Router();
    tenant.use('/v1', api);
    app.use('/t/:tenant', tenant);
    const admin = e();  // an app mounted in the app
    admin.post('/login/:id', limit, ok);
    app.use('/admin', admin);
    const server = await listen(app);
    try {
      const post = async (path) => (await server.request(path, { method: 'POST' })).status;
      const got = async (paths) => {
        const out = [];
        for (const path of paths) out.push(await post(path));
        return out;
      };
      assert.deepEqual(await got(['/api/login', '/API/login', '/Api/login', '/aPI/login', '/api/LOGIN']),
        [200, 200, 200, 429, 429]);
      assert.deepEqual(await got(['/t/a/v1/login', '/T/b/V1/login', '/t/c/v1/login', '/t/d/v1/login']),
        [200, 200, 200, 429]);
      assert.deepEqual(await got(['/admin/login/1', '/ADMIN/login/2', '/Admin/Login/3', '/admin/login/4']),
        [200, 200, 200, 429]);
      assert.deepEqual([...limit.limiter.limiters.keys()].sort(),
        ['/admin/login/:id 3/60s', '/api/login 3/60s', '/t/:tenant/v1/login 3/60s']);
    } finally {
      await server.close();
    }
  });
}

describe('headers', () => {
  const cases = {
    'draft-8': {
      'ratelimit-policy': '"2-in-1min";q=2;w=60',
      ratelimit: '"2-in-1min";r=1;t=60',
    },
    'draft-7': { 'ratelimit-policy': '2;w=60', ratelimit: 'limit=2, remaining=1, reset=60' },
    'draft-6': {
      'ratelimit-policy': '2;w=60',
      'ratelimit-limit': '2',
      'ratelimit-remaining': '1',
      'ratelimit-reset': '60',
    },
  };
  for (const [style, expected] of Object.entries(cases)) {
    test(style, () =>
      withApp((app) => app.get('/', rateLimit({ limit: 2, window: 60_000, headers: style }), ok), async (server) => {
        const { headers } = await server.request('/');
        const got = Object.fromEntries(Object.entries(headers).filter(([k]) => k.startsWith('ratelimit')));
        assert.deepEqual(got, expected);
        assert.equal(headers['x-ratelimit-limit'], undefined);
      }));
  }

  test('legacy headers, none of the drafts, and two draft-8 limiters listed together', () =>
    withApp((app) => {
      app.get('/legacy', rateLimit({ limit: 2, window: 60_000, headers: false, legacyHeaders: true }), ok);
      app.get('/both', rateLimit({ policy: '10/second' }), rateLimit({ policy: '100/hour' }), ok);
    }, async (server) => {
      const { headers } = await server.request('/legacy');
      assert.equal(headers.ratelimit, undefined);
      assert.equal(headers['x-ratelimit-limit'], '2');
      assert.equal(headers['x-ratelimit-remaining'], '1');
      const reset = Number(headers['x-ratelimit-reset']) - Date.now() / 1000;
      assert.ok(reset > 58 && reset <= 61, String(reset));
      const both = await server.request('/both');
      assert.equal(both.headers.ratelimit, '"10-in-1sec";r=9;t=1, "100-in-1hr";r=99;t=3600');
      assert.equal(both.headers['ratelimit-policy'], '"10-in-1sec";q=10;w=1, "100-in-1hr";q=100;w=3600');
    }));

  test('several rates: the RateLimit field names the one the core reports (policyIndex)', () => {
    // Issue 12: 5 hits, then one 1.5 s later. The 1-second window has restarted (9 left) and the 2-second one has
    // 4 left: the decision reports the 2-second rate, and the field names it.
    const clock = new TestClock(1_702_080_000_000_000);
    const store = new Store('memory://', { testClock: clock });
    return withApp((app) => app.get('/', rateLimit({ policy: '10/second; 10 per 2 seconds', store }), ok),
      async (server) => {
        const fields = [];
        for (let i = 0; i < 5; i++) fields.push((await server.request('/')).headers.ratelimit);
        assert.deepEqual(fields, [9, 8, 7, 6, 5].map((r) => `"10-in-1sec";r=${r};t=1`));  // ties: the first rate
        clock.nowUs += 1_500_000;
        const { status, headers } = await server.request('/');
        assert.equal(status, 200);
        assert.equal(headers['ratelimit-policy'], '"10-in-1sec";q=10;w=1, "10-in-2sec";q=10;w=2');
        assert.equal(headers.ratelimit, '"10-in-2sec";r=4;t=1');
      });
  });
});

test('429 with a short body and Retry-After in whole seconds, rounded up', () =>
  withApp((app) => app.get('/', rateLimit({ policy: '1/1500ms', headers: 'draft-7' }), ok), async (server) => {
    await server.request('/');
    const denied = await server.request('/');
    assert.equal(denied.status, 429);
    assert.equal(denied.body, 'Too many requests, please try again later.');
    assert.equal(denied.headers['retry-after'], '2');
    assert.match(denied.headers.ratelimit, /^limit=1, remaining=0, reset=2$/);
  }));

test('skip, sync and async', () =>
  withApp((app) => {
    app.get('/sync', rateLimit({ limit: 1, window: 60_000, skip: (req) => req.get('x-admin') === 'yes' }), ok);
    app.get('/async', rateLimit({ limit: 1, window: 60_000, skip: async (req) => req.get('x-admin') === 'yes' }), ok);
  }, async (server) => {
    for (const path of ['/sync', '/async']) {
      assert.deepEqual(await statuses(server, path, 3, { 'x-admin': 'yes' }), [200, 200, 200]);
      assert.deepEqual(await statuses(server, path, 2), [200, 429]);
    }
  }));

test('the default answer to a denial: the message as text, no body to a HEAD', () =>
  withApp((app) => {
    app.get('/', rateLimit({ limit: 1, window: 60_000, key: () => 'k' }), ok);
  }, async (server) => {
    assert.equal((await server.request('/')).status, 200);
    const { status, body, headers } = await server.request('/');
    assert.equal(status, 429);
    assert.equal(body, 'Too many requests, please try again later.');
    assert.equal(headers['content-type'], 'text/plain; charset=utf-8');
    assert.equal(headers['content-length'], String(Buffer.byteLength(body)));
    assert.equal(headers['retry-after'], '60');
    assert.equal(headers.ratelimit, '"1-in-1min";r=0;t=60');
    const head = await server.request('/', { method: 'HEAD' });
    assert.deepEqual([head.status, head.body, head.headers['content-length']], [429, '', String(Buffer.byteLength(body))]);
  }));

test('a custom handler and message', () =>
  withApp((app) => {
    app.get('/h', rateLimit({
      limit: 1,
      window: 60_000,
      handler: (req, res, next, decision) => res.status(503).json({ wait: decision.retryAfterMs > 0 }),
    }), ok);
    app.get('/m', rateLimit({ limit: 1, window: 60_000, message: { error: 'slow down' }, statusCode: 420 }), ok);
  }, async (server) => {
    await server.request('/h');
    const h = await server.request('/h');
    assert.deepEqual([h.status, h.body, Boolean(h.headers['retry-after'])], [503, '{"wait":true}', true]);
    await server.request('/m');
    const m = await server.request('/m');
    assert.deepEqual([m.status, m.body], [420, '{"error":"slow down"}']);
  }));

test('a handler that throws (or rejects), sync or after an await, reaches Express\'s error handling', () =>
  withApp((app) => {
    const boom = () => { throw new Error('boom'); };
    app.get('/sync', rateLimit({ limit: 1, window: 60_000, handler: boom }), ok);
    app.get('/async', rateLimit({ limit: 1, window: 60_000, key: async () => 'k', handler: boom }), ok);
    app.get('/rejects', rateLimit({ limit: 1, window: 60_000, key: async () => 'r', handler: async () => boom() }), ok);
    app.use((error, req, res, next) => res.status(500).send(error.message));
  }, async (server) => {
    for (const path of ['/sync', '/async', '/rejects']) {
      await server.request(path);
      const r = await server.request(path);
      assert.deepEqual([r.status, r.body], [500, 'boom'], path);
    }
  }));

test('a key that cannot be made is a 400 by default, or what onKeyError says', () =>
  withApp((app) => {
    app.get('/d', rateLimit({ key: byUser }), ok);
    app.get('/throws', rateLimit({ key: () => { throw new Error('no'); } }), ok);
    app.get('/long', rateLimit({ key: () => 'x'.repeat(5000) }), ok);
    app.get('/c', rateLimit({ key: byUser, onKeyError: (req, res, next, e) => res.status(401).send(e.code) }), ok);
  }, async (server) => {
    for (const path of ['/d', '/throws', '/long']) {
      const r = await server.request(path);
      const { no_key: wanted } = require('../conformance/refusals.json');
      assert.deepEqual([r.status, r.body], [wanted.status, wanted.body], path);
    }
    const c = await server.request('/c');
    assert.deepEqual([c.status, c.body], [401, codes.NO_KEY]);
    assert.equal((await server.request('/c', { headers: { 'x-user': 'a' } })).status, 200);
  }));

describe('client addresses', () => {
  test('the address follows trust proxy: one limit per IPv6 /56, or per ipv6Subnet', () =>
    withApp((app) => {
      app.set('trust proxy', 'loopback');
      app.get('/', rateLimit({ limit: 2, window: 60_000 }), ok);
      app.get('/64', rateLimit({ limit: 2, window: 60_000, ipv6Subnet: 64 }), ok);
    }, async (server) => {
      const from = (ip) => ({ 'x-forwarded-for': ip });
      assert.deepEqual(await statuses(server, '/', 1, from('2001:db8:abcd:1200::1')), [200]);
      assert.deepEqual(await statuses(server, '/', 2, from('2001:db8:abcd:12ff::2')), [200, 429]);
      assert.deepEqual(await statuses(server, '/', 1, from('2001:db8:abcd:1300::1')), [200]);
      assert.deepEqual(await statuses(server, '/', 2, from('198.51.100.7')), [200, 200]);
      assert.deepEqual(await statuses(server, '/64', 2, from('2001:db8:abcd:1200::1')), [200, 200]);
      assert.deepEqual(await statuses(server, '/64', 1, from('2001:db8:abcd:12ff::2')), [200]);
    }));

  test('X-Forwarded-For while trust proxy is off: one warning, and the header is ignored', () => {
    const warnings = [];
    const onWarning = (w) => w.code === 'RATEWARDEN_X_FORWARDED_FOR' && warnings.push(w);
    process.on('warning', onWarning);
    return withApp((app) => app.get('/', rateLimit({ limit: 2, window: 60_000 }), ok), async (server) => {
      const spoofed = (i) => ({ 'x-forwarded-for': `198.51.100.${i}` });
      const got = [];
      for (let i = 0; i < 3; i++) got.push((await server.request('/', { headers: spoofed(i) })).status);
      await new Promise((resolve) => setImmediate(resolve));
      process.off('warning', onWarning);
      assert.deepEqual(got, [200, 200, 429]);
      assert.equal(warnings.length, 1);
      assert.match(warnings[0].message, /trust proxy/);
    });
  });
});

test('options are validated, naming the option', () => {
  const bad = [
    [{ limit: 0 }, /limit must be an integer/],
    [{ window: 1.5 }, /window \(milliseconds\) must be an integer/],
    [{ policy: '5/minute', limit: 5 }, /either policy or limit\/window/],
    [{ headers: 'draft-9' }, /headers must be false or one of/],
    [{ key: 'address' }, /key must be a function, 'ip', 'user'/],
    [{ key: [] }, /an empty array makes no key/],
    [{ scope: 'a b' }, /scope must be/],
    [{ keyGenerator: () => 'x' }, /unknown rateLimit option "keyGenerator"/],
    [{ policy: 'lots' }, /"lots"/],
    [{ onStoreError: 'maybe' }, /onStoreError must be one of/],
  ];
  rateLimit({ key: undefined, headers: undefined, onStoreError: undefined });  // undefined is the default
  for (const [options, message] of bad) {
    assert.throws(() => rateLimit(options), (e) => e.code === 'ERR_RATEWARDEN_INVALID_ARGUMENT' && message.test(e.message));
  }
});

describe('Redis store', () => {
  const redis = new RedisServer();
  before(() => redis.start());
  after(() => redis.close());

  test('a handler that throws after the store answered reaches Express\'s error handling', () =>
    withApp((app) => {
      app.get('/', rateLimit({ limit: 1, window: 60_000, store: redis.url, prefix: 'throws', handler: () => {
        throw new Error('boom');
      } }), ok);
      app.use((error, req, res, next) => res.status(500).send(error.message));
    }, async (server) => {
      await server.request('/');
      const r = await server.request('/');
      assert.deepEqual([r.status, r.body], [500, 'boom']);
    }));

  test('limits shared by two apps through Redis', async () => {
    // Two apps in one process stand for two processes: they name the scope they share.
    const make = (app) => app.get('/', rateLimit({ limit: 3, window: 60_000, store: redis.url, key: byUser,
      scope: 'shared' }), ok);
    await withApp(make, (one) => withApp(make, async (two) => {
      const h = { 'x-user': 'shared' };
      const got = [];
      for (const server of [one, two, one, two]) got.push((await server.request('/', { headers: h })).status);
      assert.deepEqual(got, [200, 200, 200, 429]);
    }));
  });

  test('Redis stopped: fail open (default), fail closed, or an error for Express; back when Redis is', () =>
    withApp((app) => {
      // Three failures in a row open the store's circuit: calls fail at once for circuit_backoff, then one probe
      // closes it again.
      const url = `${redis.url}?timeout=300ms&connect_timeout=300ms&circuit_backoff=100ms`;
      app.get('/open', rateLimit({ limit: 100, window: 60_000, store: url }), ok);
      app.get('/closed', rateLimit({ limit: 100, window: 60_000, store: url, onStoreError: 'deny' }), ok);
      app.get('/raise', rateLimit({ limit: 100, window: 60_000, store: url, onStoreError: 'raise' }), ok);
      app.use((error, req, res, next) => res.status(503).send(error.code));
    }, async (server) => {
      assert.equal((await server.request('/closed')).status, 200);
      await redis.kill();
      assert.equal((await server.request('/open')).status, 200);
      const closed = await server.request('/closed');
      assert.deepEqual([closed.status, closed.headers['retry-after']], [429, '1']);
      const raised = await server.request('/raise');
      assert.deepEqual([raised.status, raised.body], [503, 'ERR_RATEWARDEN_STORE_UNAVAILABLE']);
      await redis.start();
      await new Promise((resolve) => setTimeout(resolve, 150));  // the circuit's back-off is over
      // A pooled connection from before the restart fails once when next used, then reconnects by itself.
      const after = [];
      for (let i = 0; i < 8; i++) after.push((await server.request('/closed')).status);
      assert.deepEqual(after.slice(-4), [200, 200, 200, 200], String(after));
    }));
});
