'use strict';
// The process's figures (docs/node.md, "Figures and events"): the core's, converted. Every limiter name's and
// store name's counters since the process first used the name (limiters and stores that are gone included, so
// that counters never go back), and the gauges of those that live. The names, types, help texts and labels of the
// metric families are the core's (ratewarden/metric_families.hpp), the same in every binding and in the rate
// limit service's /metrics. Each call reads counters held in memory: no round trip, no wait.

const native = require('./native');

// [{ name, allowed, denied, cost, fallbacks }] by limiter name, in the order first seen.
const limiterStats = () => native.limiterStats();

// [store.stats() of each store name], in the order first seen.
const storeStats = () => native.storeStats();

// [{ name, type: 'counter' | 'gauge' | 'histogram', help, samples: [{ labels, value }],
//    histograms: [{ labels, buckets: [[le, cumulative count]], sum, count }] }]; the last bucket's le is Infinity.
const metricFamilies = () => native.metricFamilies();

// The same families in the Prometheus text format (0.0.4), as the core writes it: for an endpoint of your own
// without prom-client.
const prometheusText = () => native.prometheusText();

module.exports = { limiterStats, storeStats, metricFamilies, prometheusText };
