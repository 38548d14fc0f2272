'use strict';
// The Limiter: a policy applied to keys through a store (docs/node.md).
//
// On the memory store every call is computed synchronously on the loop (well under a microsecond) and the Promise
// methods return settled Promises. On network stores every call runs on the core's thread pool; hits started in the
// same turn of the event loop (say, by every request read in one poll) go out together, as pipelines that many
// calls share. At most PIPELINES are in flight per limiter: calls made meanwhile wait for the next free one, so
// pipelines grow with the load instead of splitting into many small round trips; and a turn's calls are spread over
// the free ones (MIN_PIPELINE keys or more each) so that the server works on some while the loop settles others.

const native = require('./native');
const { fromCaller, fromNative, invalidArgument } = require('./errors');
const { FIELDS, decisionAt, decisionList } = require('./decision');
const { checkKey, costOf, limiterOptions } = require('./options');
const { Store, storeFor } = require('./store');

const PIPELINES = 4;  // the Redis store's default pool size
const MIN_PIPELINE = 8;

class Limiter {
  #native;
  #out = new Float64Array(FIELDS);
  #inMemory;
  #store;
  #pending = { keys: [], costs: [], settle: [] };
  #inFlight = 0;
  #flushScheduled = false;
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
    const pending = this.#pending;
    pending.keys.push(key);
    pending.costs.push(cost);
    pending.settle.push(settle);
    this.#scheduleFlush();
  }

  // After the current turn of the loop, when every call it makes has been gathered.
  #scheduleFlush() {
    if (this.#flushScheduled) return;
    this.#flushScheduled = true;
    setImmediate(() => this.#flush());
  }

  #flush() {
    this.#flushScheduled = false;
    const { keys, costs, settle } = this.#pending;
    const free = PIPELINES - this.#inFlight;
    if (keys.length === 0 || free <= 0) return;  // a pipeline that comes back schedules the next flush
    this.#pending = { keys: [], costs: [], settle: [] };
    const size = Math.ceil(keys.length / Math.min(free, Math.ceil(keys.length / MIN_PIPELINE)));
    for (let start = 0; start < keys.length; start += size) {
      const end = Math.min(keys.length, start + size);
      this.#send(keys.slice(start, end), costs.slice(start, end), settle.slice(start, end));
    }
  }

  #send(keys, costs, settle) {
    this.#inFlight++;
    const done = (error, values, errors) => {
      this.#inFlight--;
      if (this.#pending.keys.length > 0) this.#scheduleFlush();
      for (let i = 0; i < settle.length; i++) {
        settle[i](error || (errors !== null && errors[i]) || decisionAt(values, i * FIELDS));
      }
    };
    try {
      this.#native.hits(keys, costs, done);
    } catch (error) {
      done(error, null, null);
    }
  }
}

module.exports = { Limiter };
