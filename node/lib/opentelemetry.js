'use strict';
// ratewarden/opentelemetry: the core's figures as observable instruments of the OpenTelemetry API
// (@opentelemetry/api is an optional peer dependency), for programs that send their metrics over OTLP.
//
//   const { metrics } = require('@opentelemetry/api');
//   metrics.setGlobalMeterProvider(new MeterProvider({ readers: [...] }));   // the SDK's, set first
//   require('ratewarden/opentelemetry').register();                        // or register(meterProvider)
//
// The instruments are derived from the core's catalog of families (the figures ratewarden/prometheus exports), one
// rule for all (docs/observability.md, "OpenTelemetry"): a counter's _total and a unit's suffix (_seconds: unit s)
// are dropped, every _ becomes a dot, the labels are the attributes. A counter is an observable counter; a gauge of
// things counted (unit {...}) an observable up-down counter; a gauge of seconds an observable gauge. The API has no
// asynchronous histogram: the store call durations are two counters, <name>.count and <name>.sum; their buckets are
// Prometheus' (ratewarden/prometheus).
//
// One batch callback observes every instrument from one reading of the core's figures per collection.

const { codes, invalidArgument } = require('./errors');
const native = require('./native');

const METER_NAME = 'ratewarden';

// The OpenTelemetry name of the core's family `family` of `type` and `unit`.
function instrumentName(family, type, unit) {
  let name = family;
  if (type === 'counter' && name.endsWith('_total')) name = name.slice(0, -'_total'.length);
  if (unit === 's' && name.endsWith('_seconds')) name = name.slice(0, -'_seconds'.length);
  return name.replaceAll('_', '.');
}

// Every instrument register() creates: [{ name, kind: 'counter' | 'upDownCounter' | 'gauge', unit, description,
// family, part: 'value' | 'count' | 'sum' }], from the core's catalog.
function instruments() {
  const out = [];
  for (const f of native.metricCatalog()) {
    const name = instrumentName(f.name, f.type, f.unit);
    const common = { family: f.name };
    if (f.type === 'histogram') {
      out.push({ name: `${name}.count`, kind: 'counter', unit: '{observation}',
        description: `${f.help}: how many (the count of the histogram ${f.name})`, ...common, part: 'count' });
      out.push({ name: `${name}.sum`, kind: 'counter', unit: f.unit,
        description: `${f.help}: their sum (the sum of the histogram ${f.name})`, ...common, part: 'sum' });
    } else {
      const kind = f.type === 'counter' ? 'counter' : f.unit.startsWith('{') ? 'upDownCounter' : 'gauge';
      out.push({ name, kind, unit: f.unit, description: f.help, ...common, part: 'value' });
    }
  }
  return out;
}

function otelApi() {
  try {
    return require('@opentelemetry/api');
  } catch (cause) {
    if (cause.code !== 'MODULE_NOT_FOUND') throw cause;
    const error = new Error('ratewarden/opentelemetry needs @opentelemetry/api, an optional peer dependency that ' +
      'is not installed: npm install @opentelemetry/api', { cause });
    error.code = 'MODULE_NOT_FOUND';
    throw error;
  }
}

// What register() made on one meter provider.
class Registration {
  #meter;
  #observables;
  #callback;
  #active = false;

  constructor(api, meterProvider, version) {
    this.meterProvider = meterProvider;
    this.instruments = Object.freeze(instruments().map((i) => Object.freeze(i)));
    this.#meter = meterProvider.getMeter(METER_NAME, version);
    const create = {
      counter: (n, o) => this.#meter.createObservableCounter(n, o),
      upDownCounter: (n, o) => this.#meter.createObservableUpDownCounter(n, o),
      gauge: (n, o) => this.#meter.createObservableGauge(n, o),
    };
    this.#observables = this.instruments.map((i) => create[i.kind](i.name, { description: i.description,
      unit: i.unit, valueType: i.unit.startsWith('{') ? api.ValueType.INT : api.ValueType.DOUBLE }));
    this.#callback = (result) => {
      const families = new Map();
      for (const f of native.metricFamilies()) families.set(f.name, f);
      this.instruments.forEach((i, n) => {
        const f = families.get(i.family);
        if (f === undefined) return;  // none yet: no limiter, or no store of that kind, so far
        const observable = this.#observables[n];
        if (i.part === 'value') {
          for (const s of f.samples) result.observe(observable, s.value, s.labels);
        } else {
          for (const h of f.histograms) result.observe(observable, i.part === 'count' ? h.count : h.sum, h.labels);
        }
      });
    };
  }

  get active() {
    return this.#active;
  }

  start() {
    if (this.#active) return;
    this.#meter.addBatchObservableCallback(this.#callback, this.#observables);
    this.#active = true;
  }

  // Stops the instruments: the next collections observe nothing (the API cannot remove an instrument). False if
  // they were stopped already.
  unregister() {
    if (!this.#active) return false;
    this.#meter.removeBatchObservableCallback(this.#callback, this.#observables);
    this.#active = false;
    return true;
  }
}

const registrations = new WeakMap();

// Creates the observable instruments of the core's figures on `meterProvider` (default: the API's global one,
// metrics.getMeterProvider()), once: again on the same provider, the same registration (started again if it was
// unregistered). The API has no proxy for metrics, as Python's has: instruments made on its no-op provider, the global
// one until the SDK's is set, would stay no-ops; so with no SDK set, and no provider given, register() throws.
function register(meterProvider) {
  const api = otelApi();
  const provider = meterProvider === undefined ? api.metrics.getMeterProvider() : meterProvider;
  if (provider === null || typeof provider !== 'object' || typeof provider.getMeter !== 'function') {
    throw invalidArgument('register(meterProvider): meterProvider must be an OpenTelemetry MeterProvider', register);
  }
  if (meterProvider === undefined && provider.getMeter(METER_NAME) === api.createNoopMeter()) {
    const error = new Error('ratewarden/opentelemetry: the global MeterProvider is the API\'s no-op one, whose ' +
      'instruments never report: set the SDK\'s first (metrics.setGlobalMeterProvider), or pass one to register()');
    error.code = codes.NO_METER_PROVIDER;
    throw error;
  }
  let registration = registrations.get(provider);
  if (registration === undefined) {
    registration = new Registration(api, provider, native.version);
    registrations.set(provider, registration);
  }
  registration.start();
  return registration;
}

module.exports = { register, instruments, instrumentName };
