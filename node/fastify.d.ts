// Types of require('ratewarden/fastify'): the plugin. The reference is docs/node.md.

import type { FastifyPluginCallback, FastifyReply, FastifyRequest } from 'fastify';
import type { Decision } from './index';
import type * as http from './http';

type Plugin = FastifyPluginCallback<ratewarden.PluginOptions>;

declare namespace ratewarden {
  export type HttpLimit = http.HttpLimit;
  export type HttpMetrics = http.HttpMetrics;
  export type KeySpec = http.KeySpec<[FastifyRequest, FastifyReply]>;

  export interface RateLimitOptions extends http.HttpOptions<[FastifyRequest, FastifyReply]> {
    /** Answers a denied request (default: statusCode with message). The fields and Retry-After are already set. */
    handler?: (request: FastifyRequest, reply: FastifyReply, decision: Decision) => void;
    /** Answers a request whose key cannot be made (default: 400). */
    onKeyError?: (request: FastifyRequest, reply: FastifyReply, error: Error) => void;
    /** The hook that counts: "onRequest" (default) or "preHandler"; a key read from the body always counts in preHandler. */
    hook?: 'onRequest' | 'preHandler';
  }

  export interface PluginOptions extends RateLimitOptions {
    /** Every route gets the plugin's limit (default true); false: only routes whose config names one. */
    global?: boolean;
  }

  export const ratewarden: Plugin;
  export { ratewarden as default };
  export function clientKey(ip: string, ipv6Subnet?: number): string;
}

declare function ratewarden(...args: Parameters<Plugin>): ReturnType<Plugin>;
export = ratewarden;

declare module 'fastify' {
  export interface FastifyRequest {
    /** The decision of the last ratewarden limit that counted this request. */
    rateLimit?: Decision;
  }
  export interface FastifyContextConfig {
    /** This route's own limit (its options over the plugin's), or false: not limited. */
    rateLimit?: ratewarden.RateLimitOptions | false;
  }
}
