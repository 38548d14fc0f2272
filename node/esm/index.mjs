// ESM entry of require('ratewarden'): the CommonJS module's exports (one module instance for both).
import cjs from '../lib/index.js';

export const { KeyList, Limiter, RateLimitTimeoutError, Store, TestClock, codes, version } = cjs;
export default cjs;
