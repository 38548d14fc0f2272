// ESM entry of ratewarden/koa: the CommonJS module's exports (one module instance for both).
import cjs from '../lib/koa.js';

export const { rateLimit, clientKey } = cjs;
export default cjs;
