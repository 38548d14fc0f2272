// ESM entry of ratewarden/prometheus: the CommonJS module's exports (one module instance for both).
import cjs from '../lib/prometheus.js';

export const { register } = cjs;
export default cjs;
