'use strict';
// The figures and events through the Node package: a limiter's counts on the memory store and on a real Redis; the
// events of a redis-server killed and restarted (on the package's EventEmitter and on diagnostics_channel); the
// ratewarden/prometheus module in a real prom-client registry; and an Express app over real HTTP on 127.0.0.1,
// scraped by a GET of /metrics after a known load, its text checked by promtool. Counters are the process's and
// never go back: each test uses names of its own.

const { after, before, describe, test } = require('node:test');
const assert = require('node:assert/strict');
const { execFileSync, spawnSync } = require('node:child_process');
const diagnosticsChannel = require('node:diagnostics_channel');
const http = require('node:http');
const path = require('node:path');

const express = require('express');
const promClient = require('prom-client');
const ratewarden = require('ratewarden');
const { register } = require('ratewarden/prometheus');
const { rateLimit } = require('ratewarden/express');
const { FRAMEWORKS, serve } = require('./helpers/frameworks');
const { RedisServer } = require('./helpers/redis_server');

const { Limiter, Store, TestClock, events, limiterStats, storeStats, metricFamilies, prometheusText } = ratewarden;

const redis = new RedisServer();
before(() => redis.start());
after(() => redis.close());

let unique = 0;
const name = (what) => `${what}-${process.pid}-${++unique}`;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// `promtool check metrics` on `text`: its output, '' when it has nothing to say (it exits 1 on an error).
function promtool(text) {
  const r = spawnSync('/usr/bin/promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
  return r.status === 0 ? `${r.stdout}${r.stderr}` : `promtool failed (${r.status}): ${r.stdout}${r.stderr}`;
}

// The value of the series `series` (its name and labels, exactly as written) in a text exposition, or undefined.
function valueIn(text, series) {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

const byName = (all, n) => all.find((s) => s.name === n);

// Waits (up to 20 s) for an event matching `match` among `seen`.
async function eventually(seen, match, what) {
  for (let i = 0; i < 1000; i++) {
    const found = seen.find(match);
    if (found !== undefined) return found;
    await sleep(20);
  }
  assert.fail(`no ${what} event; seen: ${JSON.stringify(seen, null, 1)}`);
}

describe('limiter figures', () => {
  test('a named limiter counts its hits and reservations on the memory store, not its peeks', async () => {
    const clock = new TestClock(1_700_000_000_000_000);
    const n = name('login');
    const limiter = new Limiter({ policy: '3/minute', name: n, store: new Store('memory://', { testClock: clock }) });
    assert.equal(limiter.name, n);
    for (let i = 0; i < 5; i++) limiter.hitSync('alice');
    await limiter.hit('bob', { cost: 2 });
    await limiter.peek('carol');
    await limiter.hitMany(['carol', 'dave']);
    assert.deepEqual(limiter.stats(), { name: n, allowed: 3 + 1 + 2, denied: 2, cost: 3 + 2 + 2, fallbacks: 0 });

    const pacer = new Limiter({ policy: '1/second', algorithm: 'gcra', name: name('pacer') });
    await pacer.reserve('k', { maxWaitMs: 5000 });
    await pacer.reserve('k', { maxWaitMs: 5000 });
    await pacer.reserve('k', { maxWaitMs: 0 });
    assert.deepEqual([pacer.stats().allowed, pacer.stats().denied], [2, 1]);
  });

  test('the default name is the policy string; limiters of one name count together in limiterStats()', () => {
    const policy = `${1000 + unique}/minute; 100000/day`;
    assert.equal(new Limiter({ policy: `  ${policy} ` }).name, policy);
    const n = name('shared');
    const a = new Limiter({ policy: '2/minute', name: n });
    const b = new Limiter({ policy: '10/minute', name: n });
    for (let i = 0; i < 3; i++) a.hitSync('x');
    b.hitSync('y');
    assert.deepEqual(byName(limiterStats(), n), { name: n, allowed: 2 + 1, denied: 1, cost: 3, fallbacks: 0 });
    assert.deepEqual(a.stats(), { name: n, allowed: 2, denied: 1, cost: 2, fallbacks: 0 });
  });

  test('a bad name is refused, naming the option', () => {
    const invalid = { code: 'ERR_RATEWARDEN_INVALID_ARGUMENT' };
    assert.throws(() => new Limiter({ policy: '1/s', name: 7 }), { ...invalid, message: /name must be a string/ });
    assert.throws(() => new Limiter({ policy: '1/s', name: '' }), invalid);
    assert.throws(() => new Limiter({ policy: '1/s', name: 'x'.repeat(201) }), invalid);
    assert.equal(new Limiter({ policy: '1/s', name: 'x'.repeat(200) }).name.length, 200);
  });

  test('on a real Redis: decisions, the store\'s calls by outcome and their durations', async () => {
    const n = name('redis');
    const url = `${redis.url}?prefix=${n}`;
    const limiter = new Limiter({ policy: '4/minute', name: n, store: url });
    const decisions = await Promise.all(Array.from({ length: 6 }, () => limiter.hit('k')));
    assert.equal(decisions.filter((d) => d.allowed).length, 4);
    assert.deepEqual(limiter.stats(), { name: n, allowed: 4, denied: 2, cost: 4, fallbacks: 0 });
    const s = limiter.store.stats();
    assert.deepEqual([s.name, s.network, s.hybrid], [limiter.store.describe(), true, false]);
    assert.deepEqual(s.calls, { ok: 6, timeout: 0, unavailable: 0, error: 0 });
    assert.ok(s.connectionsOpen >= 1 && s.circuitsOpen === 0, JSON.stringify(s));
    assert.deepEqual(byName(storeStats(), s.name).calls, s.calls);
    const durations = metricFamilies().find((f) => f.name === 'ratewarden_store_call_duration_seconds');
    const ok = durations.histograms.find((h) => h.labels.store === s.name && h.labels.outcome === 'ok');
    assert.equal(ok.count, 6);
    assert.deepEqual(ok.buckets.at(-1), [Infinity, 6]);
    assert.ok(ok.buckets.every(([, c], i) => i === 0 || c >= ok.buckets[i - 1][1]), 'cumulative');
    assert.ok(ok.sum > 0 && ok.sum < 6 * 0.25, `${ok.sum}`);
  });
});

describe('events of a redis-server killed and restarted', () => {
  test('store_failed and circuit_opened, then store_recovered and circuit_closed; fallbacks counted', async () => {
    const server = new RedisServer();
    await server.start();
    const seen = [];
    const published = [];
    const onEvent = (e) => seen.push(e);
    const onPublish = (e) => published.push(e);
    events.on('event', onEvent);
    diagnosticsChannel.subscribe('ratewarden:event', onPublish);
    try {
      const n = name('failover');
      const url = `${server.url}?timeout=200ms&connect_timeout=200ms&pool=2&circuit_failures=2&circuit_backoff=50ms` +
        `&prefix=${n}`;
      const limiter = new Limiter({ policy: '100/minute', name: n, store: url, onStoreError: 'allow' });
      const store = limiter.store.describe();
      for (let i = 0; i < 5; i++) assert.equal((await limiter.hit('k')).allowed, true);

      await server.kill();
      for (let i = 0; i < 5; i++) assert.equal((await limiter.hit('k')).allowed, true);  // fail open
      assert.deepEqual(limiter.stats(), { name: n, allowed: 10, denied: 0, cost: 10, fallbacks: 5 });
      const failed = await eventually(seen, (e) => e.kind === 'store_failed' && e.store === store, 'store_failed');
      assert.equal(failed.warning, true);
      assert.match(failed.message, /calls fail: .*127\.0\.0\.1/);
      const opened = await eventually(seen, (e) => e.kind === 'circuit_opened' && e.store === store, 'circuit_opened');
      assert.equal(opened.warning, true);
      let s = limiter.store.stats();
      assert.equal(s.calls.unavailable + s.calls.timeout, 5, JSON.stringify(s.calls));
      assert.deepEqual([s.circuitsOpen, s.circuitOpenings, s.connectionsOpen], [1, 1, 0]);

      await server.start();
      // Calls fail at once while the circuit is open; the first after the back-off probes and closes it.
      for (let i = 0; i < 500 && limiter.store.stats().circuitsOpen !== 0; i++) {
        await limiter.hit('k');
        await sleep(10);
      }
      const recovered = await eventually(seen, (e) => e.kind === 'store_recovered' && e.store === store,
        'store_recovered');
      assert.equal(recovered.warning, false);
      await eventually(seen, (e) => e.kind === 'circuit_closed' && e.store === store, 'circuit_closed');
      s = limiter.store.stats();
      assert.deepEqual([s.circuitsOpen, s.circuitOpenings], [0, 1]);
      assert.ok(s.connectionsOpen >= 1);

      // The emitter's and the channel's events are the same objects, in the same order, frozen.
      const mine = (list) => list.filter((e) => e.store === store).map((e) => e.kind);
      assert.deepEqual(mine(published), mine(seen));
      assert.deepEqual(mine(seen).filter((k) => k.startsWith('store')), ['store_failed', 'store_recovered']);
      assert.ok(Object.isFrozen(failed));
      assert.deepEqual(Object.keys(failed), ['kind', 'store', 'message', 'suppressed', 'warning']);
    } finally {
      events.off('event', onEvent);
      diagnosticsChannel.unsubscribe('ratewarden:event', onPublish);
      await server.close();
    }
  });
});

test('the families of a process whose first store is a network store (no memory store before it)', () => {
  // The core's metric_families() crashed here (a reference into its growing list: the addon works around it).
  const lib = JSON.stringify(path.join(__dirname, '..', '..', 'node', 'lib'));
  for (const first of ['limiter', 'keylist']) {
    const r = spawnSync(process.execPath, ['-e', `
      const { Limiter, KeyList, metricFamilies, prometheusText, storeStats } = require(${lib});
      (async () => {
        if ('${first}' === 'limiter') await new Limiter({ policy: '5/minute', store: '${redis.url}?prefix=first' }).hit('k');
        else await new KeyList({ name: 'first', store: '${redis.url}?prefix=first' }).add('k');
        const families = metricFamilies();
        const durations = families.find((f) => f.name === 'ratewarden_store_call_duration_seconds');
        console.log(JSON.stringify({ outcomes: durations.histograms.map((h) => h.labels.outcome),
          names: families.map((f) => f.name), text: prometheusText().length > 0, stores: storeStats().length }));
      })();
    `], { encoding: 'utf8', timeout: 20000 });
    assert.equal(r.status, 0, `${first}: ${r.stderr}`);
    const out = JSON.parse(r.stdout);
    assert.deepEqual(out.outcomes, ['ok', 'timeout', 'unavailable', 'error'], first);
    assert.ok(!out.names.some((n) => n.startsWith('ratewarden_memory_')), JSON.stringify(out.names));
    assert.deepEqual([out.text, out.stores], [true, 1]);
  }
});

describe('ratewarden/prometheus in a prom-client registry', () => {
  test('every family, with the core\'s names, types and help; counts equal what was done; promtool is content', async () => {
    const registry = new promClient.Registry();
    const names = register(registry);
    const catalog = metricFamilies();
    for (const f of catalog) assert.ok(names.includes(f.name), `${f.name} is registered`);
    assert.deepEqual(register(registry), names, 'registering again declares nothing more');

    const n = name('prom "quoted"\nname');
    const memory = new Limiter({ policy: '2/minute', name: n });
    for (let i = 0; i < 3; i++) memory.hitSync('k');
    const redisLimiter = new Limiter({ policy: '5/minute', name: n, store: `${redis.url}?prefix=${name('p')}` });
    for (let i = 0; i < 7; i++) await redisLimiter.hit('k');

    const text = await registry.metrics();
    assert.equal(promtool(text), '', text);
    const label = `limiter="${n.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`;
    assert.equal(valueIn(text, `ratewarden_decisions_total{${label},outcome="allowed"}`), 2 + 5);
    assert.equal(valueIn(text, `ratewarden_decisions_total{${label},outcome="denied"}`), 1 + 2);
    assert.equal(valueIn(text, `ratewarden_decision_cost_total{${label}}`), 7);
    const store = redisLimiter.store.describe();
    const calls = `ratewarden_store_call_duration_seconds_count{store="${store}",outcome="ok"}`;
    assert.ok(valueIn(text, calls) >= 7, text);
    assert.equal(valueIn(text, `ratewarden_store_call_duration_seconds_bucket{store="${store}",outcome="ok",le="+Inf"}`),
      valueIn(text, calls));
    // The same families as the core's own text: every HELP and TYPE line, and the series of these limiters.
    const core = prometheusText();
    const meta = (t) => t.split('\n').filter((l) => l.startsWith('# ')).sort();
    assert.deepEqual(meta(text).filter((l) => meta(core).includes(l)), meta(core));
    for (const outcome of ['allowed', 'denied']) {
      const series = `ratewarden_decisions_total{${label},outcome="${outcome}"}`;
      assert.equal(valueIn(text, series), valueIn(core, series));
    }
    const json = await registry.getMetricsAsJSON();
    const histogram = json.find((m) => m.name === 'ratewarden_store_call_duration_seconds');
    assert.equal(histogram.type, 'histogram');
    assert.ok(histogram.values.some((v) => v.metricName === 'ratewarden_store_call_duration_seconds_bucket' &&
      v.labels.le === '+Inf'));
    registry.resetMetrics();  // the core's counters never go back
    assert.equal(valueIn(await registry.metrics(), `ratewarden_decision_cost_total{${label}}`), 7);
  });

  test('an OpenMetrics registry and default labels work as for prom-client\'s own metrics', async () => {
    const registry = new promClient.Registry(promClient.openMetricsContentType);
    registry.setDefaultLabels({ service: 'api' });
    register(registry);
    const n = name('openmetrics');
    new Limiter({ policy: '1/minute', name: n }).hitSync('k');
    const text = await registry.metrics();
    assert.match(text, /# TYPE ratewarden_decisions counter\n/);
    assert.ok(text.includes(`ratewarden_decisions_total{limiter="${n}",outcome="allowed",service="api"} 1\n`), text);
    assert.ok(text.endsWith('# EOF\n'));
  });

  test('node:cluster: prom-client\'s AggregatorRegistry sums each series across the workers', () => {
    const out = execFileSync(process.execPath, [path.join(__dirname, 'helpers', 'cluster_metrics.js')],
      { encoding: 'utf8', timeout: 30000 });
    assert.deepEqual(JSON.parse(out), [
      'ratewarden_decisions_total{limiter="cluster",outcome="allowed"} 6',
      'ratewarden_decisions_total{limiter="cluster",outcome="denied"} 4',
    ]);
  });

  test('register() takes prom-client\'s global registry by default; without prom-client it says to install it', () => {
    const lib = JSON.stringify(path.join(__dirname, '..', '..', 'node', 'lib'));
    const out = execFileSync(process.execPath, ['-e', `
      const promClient = require('prom-client');
      const names = require(${lib} + '/prometheus').register();
      console.log(JSON.stringify([names.length > 0, names.every((n) => promClient.register.getSingleMetric(n))]));
    `], { encoding: 'utf8' });
    assert.deepEqual(JSON.parse(out), [true, true]);
    // prom-client hidden from require(): a clear error, unless a registry is given.
    const r = spawnSync(process.execPath, ['-e', `
      const Module = require('node:module');
      const resolve = Module._resolveFilename;
      Module._resolveFilename = function (request, ...rest) {
        if (request === 'prom-client') throw Object.assign(new Error("Cannot find module 'prom-client'"), { code: 'MODULE_NOT_FOUND' });
        return resolve.call(this, request, ...rest);
      };
      const { register } = require(${lib} + '/prometheus');
      const metrics = [];
      register({ registerMetric: (m) => metrics.push(m.name) });
      console.log(metrics.length);
      register();
    `], { encoding: 'utf8' });
    assert.notEqual(r.status, 0);
    assert.ok(Number(r.stdout) > 0, r.stdout);
    assert.match(r.stderr, /ratewarden\/prometheus needs prom-client, an optional peer dependency .*npm install prom-client/);
    assert.match(r.stderr, /code: 'MODULE_NOT_FOUND'/);
  });
});

// An Express app on 127.0.0.1: /metrics serves a prom-client registry; GET /<base>/items/:id has a limit of 5 a
// minute per x-client header; the app has a limit of 1000 a minute per address before it. Resolves with
// { base, get(path, headers), close }.
async function metricsApp(base, store) {
  const registry = new promClient.Registry();
  register(registry);
  const app = express();
  app.get('/metrics', async (req, res) => {
    res.set('Content-Type', registry.contentType).send(await registry.metrics());
  });
  app.use(rateLimit({ policy: '1000/minute', store, scope: name('app') }));
  app.get(`${base}/items/:id`, rateLimit({ policy: '5/minute', key: 'header:x-client', store }),
    (req, res) => res.send(`item ${req.params.id}\n`));
  const server = await new Promise((resolve) => {
    const s = http.createServer(app).listen(0, '127.0.0.1', () => resolve(s));
  });
  const origin = `http://127.0.0.1:${server.address().port}`;
  return {
    async get(p, headers = {}) {
      const r = await fetch(origin + p, { headers });
      return { status: r.status, body: await r.text(), type: r.headers.get('content-type') };
    },
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

describe('an Express app scraped over HTTP after a known load', () => {
  for (const storeName of ['memory', 'redis']) {
    test(`${storeName}: allowed + denied = requests, denied = what the limit must refuse; promtool is content`, async () => {
      const base = `/${name(storeName)}`;
      const store = storeName === 'memory' ? new Store('memory://') : `${redis.url}?prefix=${name('app')}`;
      const app = await metricsApp(base, store);
      try {
        // 4 clients, 9 requests each, on two item ids: 5 of each client's pass, 4 are refused.
        const clients = ['a', 'b', 'c', 'd'];
        const statuses = await Promise.all(clients.flatMap((c) => Array.from({ length: 9 }, (_, i) =>
          app.get(`${base}/items/${i % 2}`, { 'x-client': c }).then((r) => r.status))));
        assert.equal(statuses.filter((s) => s === 200).length, 4 * 5);
        assert.equal(statuses.filter((s) => s === 429).length, 4 * 4);

        const scraped = await app.get('/metrics');
        assert.equal(scraped.status, 200);
        assert.match(scraped.type, /^text\/plain; version=0\.0\.4/);
        assert.equal(promtool(scraped.body), '', scraped.body);
        const route = `${base}/items/:id 5/60s`;
        const allowed = valueIn(scraped.body, `ratewarden_decisions_total{limiter="${route}",outcome="allowed"}`);
        const denied = valueIn(scraped.body, `ratewarden_decisions_total{limiter="${route}",outcome="denied"}`);
        assert.deepEqual([allowed, denied], [4 * 5, 4 * 4], scraped.body);
        assert.equal(allowed + denied, statuses.length);
        assert.equal(valueIn(scraped.body, `ratewarden_decision_cost_total{limiter="${route}"}`), 4 * 5);
        // The app-wide limit counted every request to the route (and none of the scrapes: /metrics comes first).
        const appWide = limiterStats().find((s) => s.name.endsWith(' 1000/60s') &&
          s.allowed === statuses.length);
        assert.ok(appWide !== undefined, JSON.stringify(limiterStats()));
        if (storeName === 'redis') {
          const url = (await app.get('/metrics')).body;
          assert.match(url, /ratewarden_store_call_duration_seconds_bucket\{store="redis:[^"]*",outcome="ok",le="0\.0001"\}/);
        } else {
          assert.match(scraped.body, /ratewarden_memory_keys\{store="memory:/);
        }
      } finally {
        await app.close();
      }
    });
  }
});

test('Express with its Redis killed: every request is a decision, and the fallbacks say which (fail open)', async () => {
  const server = new RedisServer();
  await server.start();
  try {
    const base = `/${name('killed')}`;
    const store = `${server.url}?timeout=200ms&connect_timeout=200ms&circuit_failures=2&prefix=${name('killed')}`;
    const app = await metricsApp(base, store);
    try {
      const get = () => app.get(`${base}/items/1`, { 'x-client': 'a' }).then((r) => r.status);
      const before = [];
      for (let i = 0; i < 7; i++) before.push(await get());
      await server.kill();
      const during = [];
      for (let i = 0; i < 6; i++) during.push(await get());
      assert.deepEqual([before, during], [[200, 200, 200, 200, 200, 429, 429], [200, 200, 200, 200, 200, 200]]);
      const scraped = (await app.get('/metrics')).body;
      const route = `${base}/items/:id 5/60s`;
      assert.deepEqual([valueIn(scraped, `ratewarden_decisions_total{limiter="${route}",outcome="allowed"}`),
        valueIn(scraped, `ratewarden_decisions_total{limiter="${route}",outcome="denied"}`),
        valueIn(scraped, `ratewarden_fallback_decisions_total{limiter="${route}"}`)], [11, 2, 6], scraped);
      const circuit = scraped.split('\n').find((l) => l.startsWith(`ratewarden_circuit_open{store="${server.url}/`));
      assert.ok(circuit !== undefined && circuit.endsWith(' 1'), scraped);
    } finally {
      await app.close();
    }
  } finally {
    await server.close();
  }
});

describe('the HTTP adapters name their limiters', () => {
  for (const framework of FRAMEWORKS) {
    test(`${framework}: a route's limits count under "<route> <rates>", others under "<scope> <rates>"`, async () => {
      const base = `/${name(framework)}`;
      const scope = name('app');
      const limits = framework === 'fastify' ? [{ policy: '2/minute' }]
        : [{ policy: '2/minute' }, { limit: 3, window: 60_000, key: 'header:x-client' }];
      const server = await serve(framework, {
        app: { policy: '500/minute', scope },
        routes: [{ method: 'POST', path: `${base}/users/:user_id/login`, limits }],
      });
      try {
        const statuses = [];
        for (let i = 0; i < 4; i++) {
          statuses.push((await server.request(`${base}/users/${i}/login`, { method: 'POST',
            headers: { 'x-client': 'c' } })).status);
        }
        assert.deepEqual(statuses, [200, 200, 429, 429]);
        const stats = limiterStats();
        assert.deepEqual(byName(stats, `${base}/users/:user_id/login 2/60s`),
          { name: `${base}/users/:user_id/login 2/60s`, allowed: 2, denied: 2, cost: 2, fallbacks: 0 });
        if (framework !== 'fastify') {
          // The second limit of the route, met by the two requests the first let through.
          assert.deepEqual(byName(stats, `${base}/users/:user_id/login#2 3/60s`),
            { name: `${base}/users/:user_id/login#2 3/60s`, allowed: 2, denied: 0, cost: 2, fallbacks: 0 });
        }
        // Fastify: a route's own limit replaces the plugin's (the plugin's was never used, so never made).
        if (framework === 'fastify') assert.equal(byName(stats, `${scope} 500/60s`), undefined);
        else assert.equal(byName(stats, `${scope} 500/60s`).allowed, 4);
      } finally {
        await server.close();
      }
    });
  }

  test('a store in a hybrid mode that dies: its failure is logged (the events name its shared store)', async () => {
    const server = new RedisServer();
    await server.start();
    const lines = [];
    const logger = { warn: (m) => lines.push(m) };
    const url = `${server.url}?timeout=200ms&connect_timeout=200ms&mode=local_first&prefix=${name('hybrid')}`;
    const app = express();
    app.get('/h', rateLimit({ policy: '100/minute', store: url, logger }), (req, res) => res.send('ok'));
    const listening = await new Promise((resolve) => {
      const s = http.createServer(app).listen(0, '127.0.0.1', () => resolve(s));
    });
    const get = async () => (await fetch(`http://127.0.0.1:${listening.address().port}/h`)).status;
    try {
      assert.equal(await get(), 200);
      await server.kill();
      for (let i = 0; i < 200 && lines.length === 0; i++) {
        assert.equal(await get(), 200);  // fail open
        await sleep(20);
      }
      assert.equal(lines.length, 1, lines.join('\n'));
      assert.match(lines[0], /^ratewarden\/express: the store failed \(calls fail: .*\); requests are let through unlimited/);
    } finally {
      await new Promise((resolve) => listening.close(resolve));
      await server.close();
    }
  });
});
