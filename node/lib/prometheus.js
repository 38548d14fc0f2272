'use strict';
// ratewarden/prometheus: the core's figures in a prom-client registry (prom-client is an optional peer dependency).
//
//   const promClient = require('prom-client');
//   require('ratewarden/prometheus').register();                      // or register(myRegistry)
//   app.get('/metrics', async (req, res) => {
//     res.set('Content-Type', promClient.register.contentType).send(await promClient.register.metrics());
//   });
//
// Each family of the core's metricFamilies() is one object in the registry, read at scrape time: the registry asks
// each for its values (get()), and all of them answer from one reading of the core's figures per scrape, so one
// scrape is one instant. The names, types, help texts and labels are the core's, unchanged.
//
// Why not prom-client's Counter, Gauge and Histogram with collect(): their values are observations made in this
// process (inc, set, observe), and a histogram's buckets, sum and count computed elsewhere — the core's store call
// durations — cannot be set through observe(). These objects give the registry what prom-client's own metrics give
// it (name, help, type, aggregator, get() resolving { values: [{ labels, value, metricName }] }), so the registry's
// text (Prometheus or OpenMetrics), getMetricsAsJSON(), default labels and the cluster AggregatorRegistry (which sums
// each series across the workers) all work as for its own metrics.

const native = require('./native');

// The figures of one scrape: read once, shared by every family's get() made in the same turn (the registry asks
// them all at once), dropped after it.
let snapshot;
function familiesNow() {
  if (snapshot === undefined) {
    snapshot = new Map();
    for (const f of native.metricFamilies()) snapshot.set(f.name, f);
    queueMicrotask(() => {
      snapshot = undefined;
    });
    registerNewFamilies(snapshot);
  }
  return snapshot;
}

const le = (bound) => (bound === Infinity ? '+Inf' : bound);

// One family's series in the registry's form.
function valuesOf(family) {
  if (family === undefined) return [];  // none yet (no store of that kind in the process)
  if (family.type !== 'histogram') return family.samples.map(({ labels, value }) => ({ labels, value }));
  const values = [];
  for (const h of family.histograms) {
    for (const [bound, count] of h.buckets) {
      values.push({ labels: { ...h.labels, le: le(bound) }, value: count, metricName: `${family.name}_bucket` });
    }
    values.push({ labels: h.labels, value: h.sum, metricName: `${family.name}_sum` });
    values.push({ labels: h.labels, value: h.count, metricName: `${family.name}_count` });
  }
  return values;
}

class CoreFamily {
  #family;

  constructor({ name, type, help, labelNames }) {
    this.#family = name;
    this.name = name;  // an OpenMetrics registry renames a counter (drops _total) and adds _total to its lines
    this.help = help;
    this.type = type;
    this.labelNames = labelNames;
    this.aggregator = 'sum';
  }

  get() {
    return Promise.resolve({ name: this.name, help: this.help, type: this.type, aggregator: this.aggregator,
      values: valuesOf(familiesNow().get(this.#family)) });
  }

  // The core's counters never go back: registry.resetMetrics() leaves them.
  reset() {}
}

// Registries given to register(), and the family names each holds.
const registries = new Map();

function addTo(registry, known, family) {
  if (known.has(family.name)) return;
  registry.registerMetric(new CoreFamily(family));
  known.add(family.name);
}

// A family the core gives that the catalog did not list (a newer core's) joins every registry: from the next
// scrape on.
function registerNewFamilies(families) {
  for (const [registry, known] of registries) {
    for (const f of families.values()) {
      if (!known.has(f.name)) {
        addTo(registry, known, { name: f.name, type: f.type, help: f.help,
          labelNames: Object.keys((f.samples[0] || f.histograms[0] || { labels: {} }).labels) });
      }
    }
  }
}

function promClient() {
  try {
    return require('prom-client');
  } catch (cause) {
    if (cause.code !== 'MODULE_NOT_FOUND') throw cause;
    const error = new Error('ratewarden/prometheus needs prom-client, an optional peer dependency that is not ' +
      'installed: npm install prom-client (or pass your own registry to register())', { cause });
    error.code = 'MODULE_NOT_FOUND';
    throw error;
  }
}

// Declares every family the core can give in `registry` (default: prom-client's global registry), read from the
// core at each scrape. Returns their names. Again on the same registry: nothing more is declared.
function register(registry) {
  const target = registry === undefined ? promClient().register : registry;
  if (target === null || typeof target !== 'object' || typeof target.registerMetric !== 'function') {
    const error = new TypeError('register(registry): registry must be a prom-client Registry');
    error.code = 'ERR_RATEWARDEN_INVALID_ARGUMENT';
    throw error;
  }
  let known = registries.get(target);
  if (known === undefined) registries.set(target, known = new Set());
  for (const family of native.metricCatalog()) addTo(target, known, family);
  return [...known];
}

module.exports = { register };
