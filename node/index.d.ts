// Types of require('ratewarden'). The reference is docs/node.md.

/// <reference types="node" />

export type Algorithm = 'fixed_window' | 'sliding_log' | 'sliding_window' | 'token_bucket' | 'gcra';

/** What a limiter does when the store fails: reject (default), allow (fail open) or deny (fail closed). */
export type OnStoreError = 'raise' | 'allow' | 'deny';

/** Any byte string of 1 to 4096 bytes: a string (as UTF-8) or a Buffer / Uint8Array (as is). */
export type Key = string | Uint8Array;

/** The answer to a hit or a peek. A denial is a decision with `allowed: false`, not an error. */
export interface Decision {
  readonly allowed: boolean;
  /** The capacity of the rate reported (the tightest one when there are several). */
  readonly limit: number;
  /** What is left after this call. */
  readonly remaining: number;
  /** Milliseconds, rounded up, until the key is back to its full quota. */
  readonly resetAfterMs: number;
  /** 0 when allowed; else the milliseconds, rounded up, after which the same call is allowed (if no other traffic). */
  readonly retryAfterMs: number;
  /** Consumed in the current window or bucket. */
  readonly used: number;
  /**
   * The rate this decision reports: its index (from 0) in the policy string, e.g. 1 for "1000/hour" in
   * "10/second; 1000/hour". Always 0 for a single rate.
   */
  readonly policyIndex: number;
  /** resetAfterMs, exact, in microseconds. */
  readonly resetAfterUs: number;
  /** retryAfterMs, exact, in microseconds. */
  readonly retryAfterUs: number;
}

/** A reservation's answer (limiter.reserve): allowed, act after waitMs; denied, nothing was charged. */
export interface Reservation extends Decision {
  /** Milliseconds, rounded up, to wait before acting (0: now). */
  readonly waitMs: number;
  /** waitMs, exact, in microseconds. */
  readonly waitUs: number;
  /** What cancel needs to give the slot back; 0 when it cannot be (several rates). */
  readonly ticket: number;
}

export interface ReserveOptions extends CallOptions {
  /** The longest wait accepted, in milliseconds (default Infinity: no bound). */
  maxWaitMs?: number;
}

export interface Rate {
  readonly algorithm: Algorithm;
  readonly limit: number;
  readonly periodMs: number;
  /** The largest cost one call may ask for: the burst for token_bucket and gcra, else the limit. */
  readonly capacity: number;
}

export interface CallOptions {
  /** An integer from 1 to the policy's capacity; default 1. */
  cost?: number;
}

export interface AcquireOptions extends CallOptions {
  /** The longest wait accepted, in ms (default: no limit; 0: only a slot free now). */
  timeoutMs?: number;
  /** Aborting it rejects the wait with its reason and gives the slot back. */
  signal?: AbortSignal;
}

export interface WrapOptions<A extends unknown[] = unknown[], T = unknown> extends AcquireOptions {
  /** The key of every call, or a function of each call's arguments (called with its `this`). */
  key: Key | ((this: T, ...args: A) => Key);
}

/**
 * acquire's rejection when the wait would exceed timeoutMs: nothing was charged. With onStoreError "deny", also the
 * rejection when the store fails (timeoutMs undefined).
 */
export declare class RateLimitTimeoutError extends Error {
  /** The message is made from the key, the refusal's retryAfterMs and timeoutMs. */
  constructor(key: Key, decision: Decision, timeoutMs?: number);
  readonly name: 'RateLimitTimeoutError';
  readonly code: 'ERR_RATEWARDEN_RATE_LIMIT_TIMEOUT';
  /** The refusal: retryAfterMs is the wait that would have been needed. */
  readonly decision: Decision;
  readonly timeoutMs: number | undefined;
}

export interface LimiterOptions {
  /** "100/minute", "10 per second", "5 per 30 seconds", "1000/1h", "2/500ms"; several joined by ";" or ",". */
  policy: string;
  /** A Store, or a URL: "memory://" (default; a store of the limiter's own), "redis://host:port", ... */
  store?: string | Store;
  /** Default "fixed_window". */
  algorithm?: Algorithm;
  /** token_bucket / gcra capacity (default: the limit); a single rate only. */
  burst?: number;
  /** sliding_window precision, 1 to 1000 (default 10). */
  buckets?: number;
  /** Storage key prefix (default: the store's, "rw"). */
  prefix?: string;
  /** Default "raise". */
  onStoreError?: OnStoreError;
  /**
   * What its figures are counted under (stats(), limiterStats(), the metrics' `limiter` label): 1 to 200 bytes.
   * Default: the policy string. Limiters of one name count together.
   */
  name?: string;
}

/** A limiter's decisions (hits and reservations; peeks, refunds and cancels are not decisions). */
export interface LimiterStats {
  readonly name: string;
  readonly allowed: number;
  readonly denied: number;
  /** The cost the allowed decisions charged. */
  readonly cost: number;
  /** Decisions onStoreError "allow" or "deny" gave because the store failed. */
  readonly fallbacks: number;
}

export declare class Limiter {
  constructor(options: LimiterOptions);
  readonly store: Store;
  readonly policies: readonly Rate[];
  /** What its figures are counted under: the name option, else the policy string. */
  readonly name: string;
  /** This limiter's decisions so far. */
  stats(): LimiterStats;
  /** Consumes the cost if every rate allows it. */
  hit(key: Key, options?: CallOptions): Promise<Decision>;
  /** What hit would decide, consuming nothing. */
  peek(key: Key, options?: CallOptions): Promise<Decision>;
  /** Forgets the key under every rate. */
  reset(key: Key): Promise<void>;
  /** One hit per key, in one round trip where the store can. */
  hitMany(keys: readonly Key[], options?: CallOptions): Promise<Decision[]>;
  /** Gives back up to the cost of the newest charges on the key, in every rate; what peek decides afterwards. */
  refund(key: Key, options?: CallOptions): Promise<Decision>;
  /** A hit charged at the earliest instant, within maxWaitMs, that every rate allows (gcra, token_bucket). */
  reserve(key: Key, options?: ReserveOptions): Promise<Reservation>;
  /** Gives a reservation's slot back: true when it was (nothing was charged on the key after it). */
  cancel(key: Key, reservation: Reservation, options?: CallOptions): Promise<boolean>;
  /**
   * Waits for a slot of `cost` for `key` (a reservation, then one timer: docs/pacing.md) and resolves with the
   * reservation. Rejects at once, charging nothing, with a RateLimitTimeoutError when the wait would exceed
   * `timeoutMs`; with the signal's reason when it is aborted (the slot is given back first, where limiter.cancel can).
   */
  acquire(key: Key, options?: AcquireOptions): Promise<Reservation>;
  /** A paced version of `fn`: each call acquires a slot first (then calls fn with the same `this` and arguments). */
  wrap<A extends unknown[], R, T = unknown>(
    fn: (this: T, ...args: A) => R | PromiseLike<R>,
    options: WrapOptions<A, T>,
  ): (this: T, ...args: A) => Promise<R>;
  /** hit, answered synchronously: the memory store only. */
  hitSync(key: Key, options?: CallOptions): Decision;
  /** hit, answered synchronously with only whether it is allowed (no decision is made): the memory store only. */
  allowSync(key: Key, options?: CallOptions): boolean;
}

export interface KeyListOptions {
  /** 1 to 64 letters, digits, "_", "." or "-": the list's name in the store. */
  name: string;
  /** A Store or a URL (default "memory://"). */
  store?: string | Store;
  /** How long an entry lasts from when it was added, 1 ms to 3650 days (default: 10 years, i.e. until removed). */
  durationMs?: number;
}

/** A deny list or an allow list held in the store: every process of every runtime on it sees an entry at once. */
export declare class KeyList {
  constructor(options: KeyListOptions);
  readonly name: string;
  readonly durationMs: number;
  readonly store: Store;
  add(key: Key): Promise<void>;
  remove(key: Key): Promise<void>;
  has(key: Key): Promise<boolean>;
  /** Milliseconds until the key's entry ends (rounded up); 0 when it is not in the list. */
  expiresInMs(key: Key): Promise<number>;
}

export interface StoreOptions {
  /** Tests only: the store reads the time (µs) from this clock instead of its own / the Redis server's. */
  testClock?: TestClock;
}

/** Store calls by outcome; `ok` includes every answer, denials too. */
export interface StoreCalls {
  readonly ok: number;
  readonly timeout: number;
  /** Refused, cut, or failed at once while the circuit is open. */
  readonly unavailable: number;
  /** An error reply. */
  readonly error: number;
}

export interface StoreStats {
  /** describe(): the URL, password masked. */
  readonly name: string;
  /** A store on a server (Redis, Redis Cluster, PostgreSQL; a hybrid mode's). */
  readonly network: boolean;
  /** ?mode=local_first or ?mode=async. */
  readonly hybrid: boolean;
  /** States held now: one per key and rate (expired ones until they are dropped). */
  readonly keys: number;
  /** The bound on states held (memory://?max_keys=N); 0 when the store has none. */
  readonly maxKeys: number;
  /** Live states dropped to stay within maxKeys since the store opened: if it grows, size the bound up. */
  readonly evictions: number;
  /** Expired states dropped to make room. */
  readonly expiredDrops: number;
  /** Hybrid modes (?mode=local_first / async): denials answered in-process, with no round trip. */
  readonly localDenials: number;
  /** ?mode=async: hits admitted in-process from a lease already charged to the store. */
  readonly localAllows: number;
  /** Hybrid modes: calls that went to the store. */
  readonly storeCalls: number;
  /** Hybrid modes: background exchanges with the store (reset-log reads, lease top-ups). */
  readonly syncBatches: number;
  /** Hybrid modes: ms since the reset log was last read (-1: never yet). */
  readonly syncLagMs: number;
  /** Hybrid modes: local knowledge dropped because a reset was logged. */
  readonly invalidations: number;
  /** Network stores (a hybrid mode: its shared store's): calls by outcome. Zeros for the memory store. */
  readonly calls: StoreCalls;
  /** Servers whose circuit breaker is open now. */
  readonly circuitsOpen: number;
  /** Times a circuit breaker opened. */
  readonly circuitOpenings: number;
  /** Connections open now. */
  readonly connectionsOpen: number;
  /** PostgreSQL: the connections it may open. */
  readonly poolSize: number;
  /** PostgreSQL: passes of the sweep of expired rows. */
  readonly sweeps: number;
}

export declare class Store {
  /**
   * "memory://[?max_keys=N&shards=N]", "redis://[user:password@]host:port[/db][?timeout=250ms&pool=4&prefix=rw]",
   * "rediss://..." (TLS), "redis+unix:///path", "redis+cluster://host:port,...". Shared stores take
   * "?mode=local_first" or "?mode=async&sync=50ms" (docs/hybrid.md).
   */
  constructor(url?: string, options?: StoreOptions);
  /** True for a store that never waits on I/O (the memory store): its calls complete synchronously. */
  readonly inMemory: boolean;
  /** True for a store that other processes share (Redis, Redis Cluster): limiters given its URL string share it. */
  readonly shared: boolean;
  /** The URL with any password masked. */
  describe(): string;
  /** What the store can tell about itself at once, with no round trip; counters since the store opened. */
  stats(): StoreStats;
}

/** Tests only: a manual clock in microseconds for stores made with { testClock }. */
export declare class TestClock {
  constructor(startUs: number);
  nowUs: number;
}

export type ErrorCode =
  | 'ERR_RATEWARDEN_INVALID_ARGUMENT'
  | 'ERR_RATEWARDEN_STORE_UNAVAILABLE'
  | 'ERR_RATEWARDEN_STORE_TIMEOUT'
  | 'ERR_RATEWARDEN_STORE'
  | 'ERR_RATEWARDEN_INTERNAL'
  | 'ERR_RATEWARDEN_RATE_LIMIT_TIMEOUT'
  | 'ERR_RATEWARDEN_NATIVE'
  | 'ERR_RATEWARDEN_NO_KEY'
  | 'ERR_RATEWARDEN_NO_METER_PROVIDER';

/** Every failure: an Error with one of these codes. */
export interface RatewardenError extends Error {
  code: ErrorCode;
}

export declare const codes: {
  readonly INVALID_ARGUMENT: 'ERR_RATEWARDEN_INVALID_ARGUMENT';
  readonly STORE_UNAVAILABLE: 'ERR_RATEWARDEN_STORE_UNAVAILABLE';
  readonly STORE_TIMEOUT: 'ERR_RATEWARDEN_STORE_TIMEOUT';
  readonly STORE: 'ERR_RATEWARDEN_STORE';
  readonly INTERNAL: 'ERR_RATEWARDEN_INTERNAL';
  readonly RATE_LIMIT_TIMEOUT: 'ERR_RATEWARDEN_RATE_LIMIT_TIMEOUT';
  readonly NATIVE: 'ERR_RATEWARDEN_NATIVE';
  readonly NO_KEY: 'ERR_RATEWARDEN_NO_KEY';
  readonly NO_METER_PROVIDER: 'ERR_RATEWARDEN_NO_METER_PROVIDER';
};

export type Labels = Readonly<Record<string, string>>;

/** One metric family of the core: names, types, help texts and labels are the core's, the same in every binding. */
export interface MetricFamily {
  readonly name: string;
  readonly type: 'counter' | 'gauge' | 'histogram';
  readonly help: string;
  /** The unit as OpenTelemetry writes it: 's', or what is counted in braces ('{decision}'). */
  readonly unit: string;
  /** Counters and gauges. */
  readonly samples: readonly { readonly labels: Labels; readonly value: number }[];
  /** Histograms: buckets are [upper bound (Infinity last), cumulative count]. */
  readonly histograms: readonly {
    readonly labels: Labels;
    readonly buckets: readonly (readonly [number, number])[];
    readonly sum: number;
    readonly count: number;
  }[];
}

/** Every limiter name's figures in this process (gone limiters included), in the order first seen. */
export declare function limiterStats(): LimiterStats[];
/** Every store name's figures in this process (closed stores' counters included), in the order first seen. */
export declare function storeStats(): StoreStats[];
/** The process's figures as metric families. */
export declare function metricFamilies(): MetricFamily[];
/** The same families in the Prometheus text format (0.0.4). */
export declare function prometheusText(): string;

export type EventKind =
  | 'store_failed'
  | 'store_recovered'
  | 'circuit_opened'
  | 'circuit_closed'
  | 'fork_detected'
  | 'live_evictions'
  | 'lease_expired';

/** What an operator must not miss: at most one per kind and store in a second (the others counted in suppressed). */
export interface RatewardenEvent {
  readonly kind: EventKind;
  /** The store's name (its URL, password masked); "" for fork_detected. */
  readonly store: string;
  /** What happened, for a log line. */
  readonly message: string;
  /** Events of this kind and store left out since the last one. */
  readonly suppressed: number;
  /** Whether a log shows it as a warning (failures, openings, evictions). */
  readonly warning: boolean;
}

/** The core's events, emitted as 'event' (and published on the diagnostics_channel channel "ratewarden:event"). */
export interface RatewardenEvents extends NodeJS.EventEmitter {
  on(name: 'event', listener: (event: RatewardenEvent) => void): this;
  once(name: 'event', listener: (event: RatewardenEvent) => void): this;
  off(name: 'event', listener: (event: RatewardenEvent) => void): this;
  addListener(name: 'event', listener: (event: RatewardenEvent) => void): this;
  removeListener(name: 'event', listener: (event: RatewardenEvent) => void): this;
}
export declare const events: RatewardenEvents;

/** The version of the native core, "major.minor.patch". */
export declare const version: string;
