// ESM entry of ratewarden/express: the CommonJS module's exports (one module instance for both).
import cjs from '../lib/express.js';

export const { rateLimit, clientKey } = cjs;
export default cjs;
