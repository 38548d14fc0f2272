'use strict';
// A store opened by URL. Limiters given the same Store share its state (and, for Redis, its connections).

const native = require('./native');
const { invalidArgument } = require('./errors');

// Store options only storeFor gives: open through the core's open_shared_store.
const OPEN_SHARED = Symbol('open through the process\'s shared stores');

class Store {
  #native;

  // url: "memory://[?max_keys=N&shards=N]", "redis://[user:password@]host:port[/db][?timeout=1s&pool=4&prefix=rw]",
  // "rediss://..." (TLS), "redis+unix:///path", "redis+cluster://host:port,...", "postgres://user@host/db", each
  // network store with "?mode=local_first|async" if wanted (docs/deployment.md, docs/hybrid.md).
  // options.testClock (tests only): a TestClock the store reads time from.
  constructor(url = 'memory://', options = {}) {
    if (typeof url !== 'string') {
      throw invalidArgument(`store must be a URL string such as "memory://" or "redis://127.0.0.1:6379", got ${typeof url}`);
    }
    if (options === null || typeof options !== 'object') throw invalidArgument('Store options must be an object');
    const { testClock, [OPEN_SHARED]: openShared = false, ...unknown } = options;
    const extra = Object.keys(unknown);
    if (extra.length > 0) throw invalidArgument(`unknown Store option "${extra[0]}" (known: testClock)`);
    if (testClock !== undefined && !(testClock instanceof native.TestClock)) {
      throw invalidArgument('testClock must be a TestClock');
    }
    this.#native = new native.Store(url, testClock, openShared);
  }

  // True for a store that never waits on I/O (the memory store): its calls complete synchronously.
  get inMemory() {
    return this.#native.inMemory;
  }

  // True for a store that other processes share (Redis, Redis Cluster).
  get shared() {
    return this.#native.shared;
  }

  // What the store can tell about itself at once, with no round trip (docs/node.md, "Figures"): { name, network,
  // hybrid, keys, maxKeys, evictions, expiredDrops, the hybrid modes' localDenials, localAllows, storeCalls,
  // syncBatches, syncLagMs, invalidations, a network store's calls: { ok, timeout, unavailable, error },
  // circuitsOpen, circuitOpenings, connectionsOpen, and PostgreSQL's poolSize and sweeps }. Counters count since
  // the store opened.
  stats() {
    return this.#native.stats();
  }

  // The URL with any password masked: safe to log.
  describe() {
    return this.#native.describe();
  }

  toString() {
    return `Store(${this.describe()})`;
  }

  static native(store) {
    return store.#native;
  }
}

// Opening by URL never changes what is counted: the core's rule (open_shared_store), which Python's open_store and
// the C ABI's rw_store_open_shared follow too. A shared store's URL names a server, whose state is the same whichever
// Store reaches it: limiters on one URL string get one core store, so one connection pool per server, not per
// limiter, for as long as one of them holds it. memory:// names no place: each limiter given that string gets a
// store of its own, as each limiter of express-rate-limit has its own memory; to share one, pass a Store.
function storeFor(spec) {
  if (spec instanceof Store) return spec;
  if (typeof spec !== 'string') {
    throw invalidArgument('store must be a URL string (such as "memory://" or "redis://127.0.0.1:6379") or a Store');
  }
  return new Store(spec, { [OPEN_SHARED]: true });
}

module.exports = { Store, storeFor, TestClock: native.TestClock };
