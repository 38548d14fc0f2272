// ESM entry of require('ratewarden'): the CommonJS module's exports (one module instance for both).
import cjs from '../lib/index.js';

export const { KeyList, Limiter, RateLimitTimeoutError, Store, TestClock, codes, events, limiterStats,
  metricFamilies, prometheusText, storeStats, version } = cjs;
export default cjs;
