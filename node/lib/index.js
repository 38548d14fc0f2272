'use strict';
// ratewarden for Node: require('ratewarden') for the Limiter, require('ratewarden/express') for the middleware.

const native = require('./native');
const { codes } = require('./errors');
const { Limiter } = require('./limiter');
const { KeyList } = require('./lists');
const { RateLimitTimeoutError } = require('./pacing');
const { Store, TestClock } = require('./store');

module.exports = { KeyList, Limiter, RateLimitTimeoutError, Store, TestClock, codes, version: native.version };
