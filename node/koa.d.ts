// Types of require('ratewarden/koa'). The reference is docs/node.md.

import type { Context, Middleware } from 'koa';
import type { Decision } from './index';
import type { HttpLimit, HttpOptions } from './http';

export type { HttpLimit, HttpMetrics, HttpOptions, KeySpec, KeyValue, Logger } from './http';

export interface RateLimitOptions extends HttpOptions<[Context]> {
  /** Answers a denied request (default: statusCode with message). The fields and Retry-After are already set. */
  handler?: (ctx: Context, decision: Decision) => void | Promise<void>;
  /** Answers a request whose key cannot be made (default: 400). */
  onKeyError?: (ctx: Context, error: Error) => void | Promise<void>;
}

export interface RateLimitMiddleware extends Middleware {
  readonly limiter: HttpLimit;
}

/** Koa 2 middleware; the decision is ctx.state.rateLimit. */
export declare function rateLimit(options?: RateLimitOptions): RateLimitMiddleware;

export declare function clientKey(ip: string, ipv6Subnet?: number): string;
