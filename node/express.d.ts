// Types of require('ratewarden/express'). The reference is docs/node.md.

import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { Algorithm, Decision, Key, Store } from './index';

export interface RateLimitOptions {
  /** Requests per window (default 5). Give limit/window or policy. */
  limit?: number;
  /** Window in milliseconds (default 60000). */
  window?: number;
  /** A policy string instead of limit/window: "100/minute", "10/second; 1000/hour". */
  policy?: string;
  algorithm?: Algorithm;
  burst?: number;
  buckets?: number;
  prefix?: string;
  /** A Store or a URL (default "memory://"). */
  store?: string | Store;
  /** The key of a request (default: the client address, IPv6 masked to ipv6Subnet). May be async. */
  key?: (req: Request, res: Response) => Key | undefined | Promise<Key | undefined>;
  /** Requests for which this returns true are not counted. May be async. */
  skip?: (req: Request, res: Response) => boolean | Promise<boolean>;
  /** Answers a denied request (default: statusCode with message). Retry-After is already set. */
  handler?: (req: Request, res: Response, next: NextFunction, decision: Decision) => void;
  /** Answers a request whose key cannot be made (default: 400). */
  onKeyError?: (req: Request, res: Response, next: NextFunction, error: Error) => void;
  /** Body of the default 429 answer. */
  message?: string | object;
  /** Default 429. */
  statusCode?: number;
  /** IETF header fields to send (default "draft-8": the form of the draft's versions 8 to 11), or false. */
  headers?: 'draft-8' | 'draft-7' | 'draft-6' | false;
  /** X-RateLimit-Limit / -Remaining / -Reset (default false). */
  legacyHeaders?: boolean;
  /** When the store fails: "allow" (default: fail open), "deny" (fail closed) or "raise" (next(error)). */
  onStoreError?: 'allow' | 'deny' | 'raise';
  /** Prefix length, 8 to 128, of IPv6 client keys (default 56, as Flask's RATEWARDEN_IPV6_SUBNET). */
  ipv6Subnet?: number;
}

export declare function rateLimit(options?: RateLimitOptions): RequestHandler;

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
