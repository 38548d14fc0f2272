// ESM entry of ratewarden/fastify: the plugin as the default export, as the CommonJS module is (one instance).
import cjs from '../lib/fastify.js';

export const { ratewarden, clientKey } = cjs;
export default cjs;
