// ESM entry of ratewarden/opentelemetry: the CommonJS module's exports (one module instance for both).
import cjs from '../lib/opentelemetry.js';

export const { register, instruments, instrumentName } = cjs;
export default cjs;
