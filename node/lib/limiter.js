'use strict';
// The Limiter: a policy applied to keys through a store (docs/node.md).
//
// On the memory store every call is computed synchronously on the loop (well under a microsecond) and the Promise
// methods return settled Promises. On network stores every call runs on the core's thread pool; hits started in the
// same turn of the event loop (say, by every request read in one poll) go out together, as pipelines of at most
// BATCH keys, so that many of them share one round trip.

const native = require('./native');
const { fromCaller, fromNative, invalidArgument } = require('./errors');
const { FIELDS, decisionAt, decisionList } = require('./decision');
const { checkKey, costOf, limiterOptions } = require('./options');
const { Store, storeFor } = require('./store');

// Several pipelines in flight keep the server busy while the loop settles the answers of the previous ones.
const BATCH = 32;

class Limiter {
  #native;
  #out = new Float64Array(FIELDS);
  #inMemory;
  #store;
  #batch = null;
  #policies;

  constructor(options) {
    const o = limiterOptions(options);
    this.#store = storeFor(o.store);
    this.#inMemory = this.#store.inMemory;
    this.#native = new native.Limiter(Store.native(this.#store), o.policy, o.native, this.#out);
  }

  get store() {
    return this.#store;
  }

  // The rates of the policy: [{ algorithm, limit, periodMs, capacity }].
  get policies() {
    if (this.#policies === undefined) this.#policies = Object.freeze(this.#native.policies().map(Object.freeze));
    return this.#policies;
  }

  // Consumes `cost` (default 1) for `key` if every rate allows it. A denial resolves with allowed: false.
  hit(key, options) {
    let cost;
    try {
      if (this.#inMemory) return Promise.resolve(this.#hitNow(key, options, this.hit));
      checkKey(key, this.hit);
      cost = costOf(options, this.hit);
    } catch (error) {
      return Promise.reject(fromCaller(error, this.hit));
    }
    return this.#remoteHit(key, cost);
  }

  // What hit would decide, consuming nothing.
  peek(key, options) {
    return this.#call(this.peek, key, options, (cost, done) => this.#native.peek(key, cost, done));
  }

  // Forgets the key under every rate of the policy. Resolves with undefined.
  reset(key) {
    return this.#call(this.reset, key, undefined, (cost, done) => this.#native.reset(key, done));
  }

  // One hit per key, in one round trip where the store can. Resolves with one decision per key. An invalid key
  // charges nothing.
  hitMany(keys, options) {
    if (!Array.isArray(keys)) return Promise.reject(invalidArgument('keys must be an array', this.hitMany));
    return this.#call(this.hitMany, keys, options, (cost, done) => this.#native.hitMany(keys, cost, done));
  }

  // The memory store only: hit, answered synchronously.
  hitSync(key, options) {
    if (!this.#inMemory) {
      throw invalidArgument('hitSync works on the memory store only: use await limiter.hit() with a network store',
        this.hitSync);
    }
    try {
      return this.#hitNow(key, options, this.hitSync);
    } catch (error) {
      throw fromCaller(error, this.hitSync);
    }
  }

  // A hit on the memory store, decided now. The addon checks the key's type itself: one JS check less on the
  // fastest path, and no cost argument to read in the usual case.
  #hitNow(key, options, method) {
    if (options === undefined) this.#native.hitSync(key);
    else this.#native.hitSync(key, costOf(options, method));
    return decisionAt(this.#out, 0);
  }

  async #remoteHit(key, cost) {
    const answer = await new Promise((settle) => this.#enqueue(key, cost, settle));
    if (answer instanceof Error) throw fromNative(answer);
    return answer;
  }

  // peek, reset, hitMany: synchronous on the memory store, else the native call with a callback.
  #call(method, keys, options, start) {
    try {
      if (!Array.isArray(keys)) checkKey(keys, method);
      const cost = costOf(options, method);
      if (!this.#inMemory) return this.#remoteCall(method, cost, start);
      const n = this.#native;
      if (method === this.hitMany) return Promise.resolve(decisionList(n.hitManySync(keys, cost)));
      if (method === this.reset) return Promise.resolve(n.resetSync(keys));
      n.peekSync(keys, cost);
      return Promise.resolve(decisionAt(this.#out, 0));
    } catch (error) {
      return Promise.reject(fromCaller(error, method));
    }
  }

  async #remoteCall(method, cost, start) {
    const [error, values] = await new Promise((settle) => start(cost, (e, v) => settle([e, v])));
    if (error) throw fromNative(error);
    if (method === this.reset) return undefined;
    return method === this.hitMany ? decisionList(values) : decisionAt(values, 0);
  }

  #enqueue(key, cost, settle) {
    let batch = this.#batch;
    if (batch === null) {
      batch = this.#batch = { keys: [], costs: [], settle: [] };
      setImmediate(() => this.#flush(batch));
    }
    batch.keys.push(key);
    batch.costs.push(cost);
    batch.settle.push(settle);
    if (batch.keys.length === BATCH) this.#flush(batch);
  }

  #flush(batch) {
    if (this.#batch !== batch) return;  // already sent, full
    this.#batch = null;
    const { settle } = batch;
    try {
      this.#native.hits(batch.keys, batch.costs, (error, values, errors) => {
        for (let i = 0; i < settle.length; i++) {
          settle[i](error || (errors !== null && errors[i]) || decisionAt(values, i * FIELDS));
        }
      });
    } catch (error) {
      for (const s of settle) s(error);
    }
  }
}

module.exports = { Limiter };
