'use strict';
// ratewarden for Node: require('ratewarden') for the Limiter, require('ratewarden/express') for the middleware,
// require('ratewarden/prometheus') for prom-client.

const native = require('./native');
const { codes } = require('./errors');
const { events } = require('./events');
const { Limiter } = require('./limiter');
const { KeyList } = require('./lists');
const { limiterStats, storeStats, metricFamilies, prometheusText } = require('./metrics');
const { RateLimitTimeoutError } = require('./pacing');
const { Store, TestClock } = require('./store');

module.exports = { KeyList, Limiter, RateLimitTimeoutError, Store, TestClock, codes, events, limiterStats,
  metricFamilies, prometheusText, storeStats, version: native.version };
