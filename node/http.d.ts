// The options every ratewarden HTTP adapter takes (ratewarden/express, ratewarden/fastify, ratewarden/koa), typed
// over the framework's request arguments: Args is [req, res] (Express), [request, reply] (Fastify) or [ctx] (Koa).
// The reference is docs/node.md.

import type { Algorithm, Decision, KeyList, Store } from './index';

/** What a key function may return: a string or bytes, a number or bigint, or any object with a string form of its own. */
export type KeyValue = string | Uint8Array | number | bigint | { toString(): string };

/** 'ip', 'user', 'header:<name>', 'body:<field>', or a function of the request. */
export type KeySpec<Args extends unknown[]> =
  | 'ip'
  | 'user'
  | `header:${string}`
  | `body:${string}`
  | ((...args: Args) => KeyValue | undefined | null | Promise<KeyValue | undefined | null>);

export interface Logger {
  warn(message: string): void;
}

export interface HttpOptions<Args extends unknown[]> {
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
  /**
   * The counters this limit counts on (letters, digits, "_", "." and "-"). Limits naming one scope share one count,
   * and a request meeting several of them counts once. Default: in a route, the route's name (its path template,
   * `/api/users/:id/login`: the name every adapter of every language gives it); elsewhere a scope of this limit's
   * own, named from its policy and key and its rank among the process's limits alike.
   */
  scope?: string;
  /** The key of a request (default 'ip'), or several combined in an array. */
  key?: KeySpec<Args> | readonly KeySpec<Args>[];
  /** Prefix length, 8 to 128, of IPv6 client keys (default 56). */
  ipv6Subnet?: number;
  /** Requests for which this returns true are not counted. May be async. */
  skip?: (...args: Args) => boolean | Promise<boolean>;
  /** Body of the default 429 answer: a string (text/plain) or an object (JSON); the problem's detail when problem. */
  message?: string | object;
  /** Default 429; an integer from 400 to 599. */
  statusCode?: number;
  /** Answer a denial with application/problem+json (the IETF quota-exceeded problem type). Default false. */
  problem?: boolean;
  /** IETF header fields to send (default "draft-8": the form of the draft's versions 8 to 11), or false. */
  headers?: 'draft-8' | 'draft-7' | 'draft-6' | false;
  /** X-RateLimit-Limit / -Remaining / -Reset (default false). */
  legacyHeaders?: boolean;
  /** When the store fails: "allow" (default: fail open), "deny" (fail closed) or "raise" (the framework's error handling). */
  onStoreError?: 'allow' | 'deny' | 'raise';
  /** The field that says limiting was skipped because the store failed (default "RateLimit-Skipped"), or false. */
  skippedHeader?: string | false;
  /**
   * Count only what matters: once the response is sent, a request this limit counted is given back (the core's
   * refund) unless this says it counts — "failure" (a status of 400 or more: count failed logins only), "success"
   * (below 400), or a function of the request, called after the response (may be async).
   */
  countWhen?: 'failure' | 'success' | ((...args: Args) => boolean | Promise<boolean>);
  /** Decide and send the fields, but never refuse (a dry run). Default false. */
  shadow?: boolean;
  /** Clients (by this limit's key) in this list skip the limit, on every process (docs/key-lists.md). */
  allowList?: KeyList;
  /** Clients in this list are refused with 403, on every process. */
  denyList?: KeyList;
  /** Milliseconds a client the limit refused stays refused (429 until then), on every process. */
  blockDuration?: number;
  /** Where warnings go (default console): store failures, keys that cannot be made, shadow denials. */
  logger?: Logger;
  /** At most one warning of a kind per this many milliseconds (default 10000). */
  logInterval?: number;
}

/** What a limit did so far. */
export interface HttpMetrics {
  readonly allowed: number;
  readonly denied: number;
  readonly shadowDenied: number;
  readonly skipped: number;
  readonly keyErrors: number;
  readonly storeErrors: number;
  /** Counts given back because countWhen said the response does not count. */
  readonly refunded: number;
  /** Requests that skipped the limit (allowList), were refused as deny-listed, or refused while blocked. */
  readonly allowListed: number;
  readonly denyListed: number;
  readonly blocked: number;
}

/** The limit behind a middleware (its `limiter` property). */
export interface HttpLimit {
  /** The scope it counts on. */
  readonly scope: string;
  readonly metrics: HttpMetrics;
}

export type { Decision };
