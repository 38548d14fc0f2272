// Types of require('ratewarden/express'). The reference is docs/node.md.

import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { Decision } from './index';
import type { HttpLimit, HttpOptions } from './http';

export type { HttpLimit, HttpMetrics, HttpOptions, KeySpec, KeyValue, Logger } from './http';

export interface RateLimitOptions extends HttpOptions<[Request, Response]> {
  /** Answers a denied request (default: statusCode with message). The fields and Retry-After are already set. */
  handler?: (req: Request, res: Response, next: NextFunction, decision: Decision) => void;
  /** Answers a request whose key cannot be made (default: 400). */
  onKeyError?: (req: Request, res: Response, next: NextFunction, error: Error) => void;
}

export interface RateLimitMiddleware extends RequestHandler {
  readonly limiter: HttpLimit;
}

export declare function rateLimit(options?: RateLimitOptions): RateLimitMiddleware;

/**
 * The key of a client address: IPv4 as is, IPv4-mapped IPv6 as IPv4, other IPv6 masked to its /ipv6Subnet network
 * (default 56) in RFC 5952 text ("2001:db8:abcd:1200::/56"), anything else unchanged.
 */
export declare function clientKey(ip: string, ipv6Subnet?: number): string;

declare global {
  namespace Express {
    interface Request {
      /** The decision of the last ratewarden limiter that counted this request. */
      rateLimit?: Decision;
    }
  }
}
