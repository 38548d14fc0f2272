'use strict';
// ratewarden/opentelemetry with the real OpenTelemetry SDK (@opentelemetry/sdk-metrics): the points a MetricReader
// collects after a known load equal what was done, on the memory store and a real redis-server (a hybrid mode too);
// the number of series does not grow with the keys; registering twice, unregistering and registering again; the
// global meter provider; the PeriodicExportingMetricReader and InMemoryMetricExporter of the docs; the names
// @opentelemetry/exporter-prometheus writes, against ratewarden/prometheus' own; a clear error without the API.
// Counters are the process's and never go back: each test uses names of its own.

const { after, before, describe, test } = require('node:test');
const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');
const path = require('node:path');

const api = require('@opentelemetry/api');
const { AggregationTemporality, DataPointType, InMemoryMetricExporter, MeterProvider, MetricReader,
  PeriodicExportingMetricReader } = require('@opentelemetry/sdk-metrics');
const { PrometheusSerializer } = require('@opentelemetry/exporter-prometheus');
const ratewarden = require('ratewarden');
const otel = require('ratewarden/opentelemetry');
const { RedisServer } = require('./helpers/redis_server');

const { Limiter, Store, metricFamilies } = ratewarden;

const redis = new RedisServer();
before(() => redis.start());
after(() => redis.close());

let unique = 0;
const name = (what) => `${what}-${process.pid}-${++unique}`;

// A reader that collects when asked.
class TestReader extends MetricReader {
  async onForceFlush() {}
  async onShutdown() {}
}

function withReader() {
  const reader = new TestReader();
  const provider = new MeterProvider({ readers: [reader] });
  const registration = otel.register(provider);
  return { reader, provider, registration };
}

const key = (instrument, attributes) =>
  `${instrument} ${JSON.stringify(Object.entries(attributes).sort(([a], [b]) => (a < b ? -1 : 1)))}`;

// One collection: ratewarden's points as a Map of key(instrument, attributes) → value, and each instrument's metric.
async function collected(reader) {
  const { resourceMetrics, errors } = await reader.collect();
  assert.deepEqual(errors, []);
  const points = new Map();
  const metrics = new Map();
  for (const scope of resourceMetrics.scopeMetrics) {
    if (scope.scope.name !== 'ratewarden') continue;
    assert.equal(scope.scope.version, ratewarden.version);
    for (const m of scope.metrics) {
      assert.ok(!metrics.has(m.descriptor.name), `one stream per instrument: ${m.descriptor.name}`);
      metrics.set(m.descriptor.name, m);
      for (const p of m.dataPoints) points.set(key(m.descriptor.name, p.attributes), p.value);
    }
  }
  return { points, metrics, value: (instrument, attributes) => points.get(key(instrument, attributes)) };
}

const byName = () => new Map(otel.instruments().map((i) => [i.name, i]));

describe('the instruments', () => {
  test('are the core\'s families by one rule, each family once', () => {
    const instruments = byName();
    const kindUnit = (n) => [instruments.get(n).kind, instruments.get(n).unit];
    assert.deepEqual(kindUnit('ratewarden.decisions'), ['counter', '{decision}']);
    assert.deepEqual(kindUnit('ratewarden.store.call.duration.count'), ['counter', '{observation}']);
    assert.deepEqual(kindUnit('ratewarden.store.call.duration.sum'), ['counter', 's']);
    assert.deepEqual(kindUnit('ratewarden.store.errors'), ['counter', '{call}']);
    assert.deepEqual(kindUnit('ratewarden.circuit.open'), ['upDownCounter', '{server}']);
    assert.deepEqual(kindUnit('ratewarden.memory.keys'), ['upDownCounter', '{state}']);
    assert.deepEqual(kindUnit('ratewarden.memory.evictions'), ['counter', '{state}']);
    assert.deepEqual(kindUnit('ratewarden.hybrid.sync.lag'), ['gauge', 's']);
    const families = new Set([...instruments.values()].map((i) => i.family));
    assert.equal(instruments.size, families.size + 1, 'the histogram is two counters');
    for (const i of instruments.values()) {
      assert.ok(i.name.startsWith('ratewarden.') && !i.name.includes('_'), i.name);
      if (i.part === 'value') {
        const back = i.name.replaceAll('.', '_') + (i.unit === 's' ? '_seconds' : '') + (i.kind === 'counter' ? '_total' : '');
        assert.equal(back, i.family);
      }
    }
    assert.equal(otel.instrumentName('ratewarden_decisions_total', 'counter', '{decision}'), 'ratewarden.decisions');
    // The families of the process now are all known, with the same units.
    for (const f of metricFamilies()) assert.ok(families.has(f.name), f.name);
  });
});

describe('after a known load', () => {
  test('a named limiter on a memory store: allowed, denied, cost, keys and evictions', async () => {
    const { reader, provider } = withReader();
    const n = name('login');
    const store = new Store('memory://?max_keys=3');
    const limiter = new Limiter({ policy: '5/minute', name: n, store });
    const allowed = 5;
    const denied = 7;
    for (let i = 0; i < allowed + denied; i++) limiter.hitSync('alice');
    await limiter.peek('alice');  // not a decision
    for (const user of ['bob', 'carol', 'dave']) await limiter.hit(user, { cost: 2 });  // 4 keys, 3 places
    const got = await collected(reader);
    assert.equal(got.value('ratewarden.decisions', { limiter: n, outcome: 'allowed' }), allowed + 3);
    assert.equal(got.value('ratewarden.decisions', { limiter: n, outcome: 'denied' }), denied);
    assert.equal(got.value('ratewarden.decision.cost', { limiter: n }), allowed + 3 * 2);
    assert.equal(got.value('ratewarden.fallback.decisions', { limiter: n }), 0);
    const s = store.stats().name;
    assert.equal(got.value('ratewarden.memory.keys', { store: s }), 3);
    assert.equal(got.value('ratewarden.memory.max.keys', { store: s }), 3);
    assert.equal(got.value('ratewarden.memory.evictions', { store: s, reason: 'live' }), 1);
    assert.equal(got.value('ratewarden.memory.evictions', { store: s, reason: 'expired' }), 0);
    const decisions = got.metrics.get('ratewarden.decisions');
    assert.equal(decisions.dataPointType, DataPointType.SUM);
    assert.equal(decisions.isMonotonic, true);
    assert.equal(decisions.descriptor.unit, '{decision}');
    assert.equal(decisions.descriptor.valueType, api.ValueType.INT);
    assert.match(decisions.descriptor.description, /^Decisions \(hits and reservations\)/);
    const keys = got.metrics.get('ratewarden.memory.keys');
    assert.deepEqual([keys.dataPointType, keys.isMonotonic], [DataPointType.SUM, false]);
    limiter.hitSync('alice');
    const again = await collected(reader);
    assert.equal(again.value('ratewarden.decisions', { limiter: n, outcome: 'denied' }), denied + 1);
    await provider.shutdown();
  });

  test('a Redis store and a hybrid mode: call counts and time, errors, circuits, connections, sync lag', async () => {
    const { reader, provider } = withReader();
    const n = name('shared');
    const limiter = new Limiter({ policy: '4/minute', name: n, store: `${redis.url}?pool=2&prefix=${n}` });
    for (let i = 0; i < 6; i++) await limiter.hit('k');
    const fast = new Limiter({ policy: '100/minute', name: name('fast'),
      store: `${redis.url}?mode=async&sync=20ms&prefix=${n}` });
    for (let i = 0; i < 3; i++) await fast.hit('k');
    const got = await collected(reader);
    assert.equal(got.value('ratewarden.decisions', { limiter: n, outcome: 'allowed' }), 4);
    assert.equal(got.value('ratewarden.decisions', { limiter: n, outcome: 'denied' }), 2);
    const store = limiter.store.describe();
    assert.equal(got.value('ratewarden.store.call.duration.count', { store, outcome: 'ok' }), 6);
    const sum = got.value('ratewarden.store.call.duration.sum', { store, outcome: 'ok' });
    assert.ok(sum > 0 && sum < 6 * 0.25, `${sum}`);
    assert.equal(got.metrics.get('ratewarden.store.call.duration.sum').descriptor.valueType, api.ValueType.DOUBLE);
    for (const kind of ['timeout', 'unavailable', 'error']) {
      assert.equal(got.value('ratewarden.store.call.duration.count', { store, outcome: kind }), 0);
      assert.equal(got.value('ratewarden.store.errors', { store, kind }), 0);
    }
    assert.equal(got.value('ratewarden.circuit.open', { store }), 0);
    const connections = got.value('ratewarden.store.connections', { store });
    assert.ok(connections >= 1 && connections <= 2, `${connections}`);
    const hybrid = fast.store.describe();
    const lag = got.value('ratewarden.hybrid.sync.lag', { store: hybrid });
    assert.ok(lag === -1 || (lag >= 0 && lag < 60), `${lag}`);
    assert.equal(got.metrics.get('ratewarden.hybrid.sync.lag').dataPointType, DataPointType.GAUGE);
    assert.ok(got.points.has(key('ratewarden.hybrid.local.decisions', { store: hybrid, answer: 'allowed' })));
    await provider.shutdown();
  });

  test('10,000 keys: not one series more', async () => {
    const { reader, provider } = withReader();
    const n = name('many-keys');
    const store = new Store('memory://?max_keys=100000');
    const limiter = new Limiter({ policy: '1/minute', name: n, store });
    limiter.hitSync('first');
    const before = await collected(reader);
    for (let i = 0; i < 10_000; i++) limiter.hitSync(`user-${i}`);
    const after = await collected(reader);
    assert.deepEqual([...after.points.keys()].sort(), [...before.points.keys()].sort());
    assert.equal(after.value('ratewarden.decisions', { limiter: n, outcome: 'allowed' }), 10_001);
    assert.equal(after.value('ratewarden.memory.keys', { store: store.stats().name }), 10_001);
    await provider.shutdown();
  });
});

describe('registration', () => {
  test('once per provider; unregister stops the instruments; register starts them again', async () => {
    const { reader, provider, registration } = withReader();
    assert.equal(otel.register(provider), registration);
    assert.equal(registration.meterProvider, provider);
    assert.equal(registration.active, true);
    assert.deepEqual(registration.instruments.map((i) => i.name), [...byName().keys()]);
    const n = name('again');
    const limiter = new Limiter({ policy: '1/minute', name: n });
    const denied = { limiter: n, outcome: 'denied' };
    limiter.hitSync('k');
    assert.equal((await collected(reader)).value('ratewarden.decisions', { limiter: n, outcome: 'allowed' }), 1);

    assert.equal(registration.unregister(), true);
    assert.equal(registration.unregister(), false);
    assert.equal(registration.active, false);
    // Nothing observed any more: this SDK repeats an asynchronous instrument's last cumulative values (Python's
    // exports none), so the figures stand still.
    limiter.hitSync('k');
    assert.equal((await collected(reader)).value('ratewarden.decisions', denied) ?? 0, 0);

    assert.equal(otel.register(provider), registration);
    assert.equal(registration.active, true);
    assert.equal((await collected(reader)).value('ratewarden.decisions', denied), 1);  // the core kept counting

    const other = withReader();
    assert.notEqual(other.registration, registration);
    assert.equal((await collected(other.reader)).value('ratewarden.decisions', denied), 1);
    await provider.shutdown();
    await other.provider.shutdown();
  });

  test('two readers of one provider: each collection reads the figures anew', async () => {
    const a = new TestReader();
    const b = new TestReader();
    const provider = new MeterProvider({ readers: [a, b] });
    otel.register(provider);
    const n = name('two-readers');
    const limiter = new Limiter({ policy: '2/minute', name: n });
    for (let round = 1; round <= 3; round++) {
      limiter.hitSync('k');
      for (const got of [await collected(a), await collected(b)]) {
        assert.equal(got.value('ratewarden.decisions', { limiter: n, outcome: 'allowed' }), Math.min(round, 2));
        assert.equal(got.value('ratewarden.decisions', { limiter: n, outcome: 'denied' }), Math.max(round - 2, 0));
      }
    }
    await provider.shutdown();
  });

  test('the global provider: refused while it is the API\'s no-op one, used once the SDK\'s is set', async () => {
    assert.throws(() => otel.register(), { code: 'ERR_RATEWARDEN_NO_METER_PROVIDER',
      message: /no-op one.*metrics\.setGlobalMeterProvider/ });
    assert.throws(() => otel.register({}), { code: 'ERR_RATEWARDEN_INVALID_ARGUMENT' });
    const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
    const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 60_000 });
    const provider = new MeterProvider({ readers: [reader] });
    api.metrics.setGlobalMeterProvider(provider);
    try {
      const registration = otel.register();
      assert.equal(registration.meterProvider, provider);
      assert.equal(otel.register(provider), registration);
      const n = name('global');
      const limiter = new Limiter({ policy: '2/minute', name: n });
      for (let i = 0; i < 3; i++) limiter.hitSync('k');
      await reader.forceFlush();
      const points = exporter.getMetrics().at(-1).scopeMetrics.find((s) => s.scope.name === 'ratewarden')
        .metrics.find((m) => m.descriptor.name === 'ratewarden.decisions').dataPoints
        .filter((p) => p.attributes.limiter === n).map((p) => [p.attributes.outcome, p.value]);
      assert.deepEqual(points, [['allowed', 2], ['denied', 1]]);
    } finally {
      await provider.shutdown();
      api.metrics.disable();
    }
  });

  test('without @opentelemetry/api: a clear error from register()', () => {
    const lib = JSON.stringify(path.join(__dirname, '..', '..', 'node', 'lib'));
    const r = spawnSync(process.execPath, ['-e', `
      const Module = require('node:module');
      const resolve = Module._resolveFilename;
      Module._resolveFilename = function (request, ...rest) {
        if (request === '@opentelemetry/api') throw Object.assign(new Error("Cannot find module '@opentelemetry/api'"), { code: 'MODULE_NOT_FOUND' });
        return resolve.call(this, request, ...rest);
      };
      const otel = require(${lib} + '/opentelemetry');
      console.log(otel.instruments().length);
      otel.register();
    `], { encoding: 'utf8' });
    assert.notEqual(r.status, 0);
    assert.ok(Number(r.stdout) > 0, r.stdout);  // the list needs no API
    assert.match(r.stderr, /ratewarden\/opentelemetry needs @opentelemetry\/api, an optional peer dependency .*npm install @opentelemetry\/api/);
  });
});

test('@opentelemetry/exporter-prometheus writes the names of ratewarden/prometheus, less the unit suffix', async () => {
  const { reader, provider } = withReader();
  const n = name('round-trip');
  new Limiter({ policy: '1/minute', name: n }).hitSync('k');
  const hybrid = new Limiter({ policy: '1/minute', name: n, store: `${redis.url}?mode=local_first&prefix=${n}` });
  await hybrid.hit('k');
  const { resourceMetrics } = await reader.collect();
  resourceMetrics.scopeMetrics = resourceMetrics.scopeMetrics.filter((s) => s.scope.name === 'ratewarden');
  const text = new PrometheusSerializer(undefined, false, undefined, true, true).serialize(resourceMetrics);
  const names = (t) => new Set(t.split('\n').filter((l) => l.startsWith('# TYPE ')).map((l) => l.split(' ')[2]));
  const ours = new Set(metricFamilies().map((f) => f.name));  // the names ratewarden/prometheus gives them
  // This exporter adds _total to a counter and no unit suffix (Python's and the Collector's add _seconds).
  const expected = new Set([...ours].filter((x) => x !== 'ratewarden_store_call_duration_seconds')
    .map((x) => x.replace(/_seconds$/, '')));
  expected.add('ratewarden_store_call_duration_count_total');
  expected.add('ratewarden_store_call_duration_sum_total');
  assert.deepEqual([...names(text)].sort(), [...expected].sort());
  assert.ok(text.includes(`ratewarden_decisions_total{limiter="${n}",outcome="allowed"} 2`), text);
  await provider.shutdown();
});
