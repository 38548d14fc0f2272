'use strict';
// The Limiter: a policy applied to keys through a store (docs/node.md).
//
// On the memory store every call is computed synchronously on the loop (well under a microsecond) and the Promise
// methods return settled Promises. On network stores each call is one asynchronous call of the core: it is sent by
// the library's I/O thread — calls made together leave together, as one pipeline per connection — and settles on
// the loop when its answer comes back (node/lib/calls.js). Arguments are checked by the addon and the core; this
// layer only reads the options object, which the addon never sees.

const native = require('./native');
const calls = require('./calls');
const { fromCaller, fromNative, invalidArgument } = require('./errors');
const { FIELDS, decisionAt, decisionList, reservationAt } = require('./decision');
const { costOf, limiterOptions, maxWaitOf } = require('./options');
const { Store, storeFor } = require('./store');
const pacing = require('./pacing');

const HIT = 0;
const PEEK = 1;
const RESET = 2;
const HIT_MANY = 3;
const RESERVE = 4;
const CANCEL = 5;
const REFUND = 6;

class Limiter {
  #native;
  #out = new Float64Array(FIELDS);
  #inMemory;
  #hitSync;  // the addon's own functions, called with no lookup on the object that holds them
  #allowSync;
  #store;
  #policies;

  constructor(options) {
    const o = limiterOptions(options);
    this.#store = storeFor(o.store);
    this.#inMemory = this.#store.inMemory;
    this.#native = new native.Limiter(Store.native(this.#store), o.policy, o.native, this.#out);
    this.#hitSync = this.#native.hitSync;
    this.#allowSync = this.#native.allowSync;
  }

  get store() {
    return this.#store;
  }

  // What its figures are counted under (stats(), limiterStats(), the exporters' `limiter` label): the name option,
  // else the policy string. Limiters of one name count together.
  get name() {
    return this.#native.name;
  }

  // This limiter's decisions so far (hits and reservations; peeks, refunds and cancels are not decisions):
  // { name, allowed, denied, cost, fallbacks } — cost: what the allowed ones charged; fallbacks: the decisions
  // onStoreError 'allow' or 'deny' gave because the store failed. A name's figures for the whole process, gone
  // limiters included: limiterStats().
  stats() {
    return this.#native.stats();
  }

  // For the HTTP layer (http.js), which applies onStoreError itself: a decision it made without the store, counted
  // in this limiter's figures as a fallback, where the core counts its own.
  static countFallback(limiter, allowed) {
    limiter.#native.countFallback(allowed);
  }

  // The rates of the policy: [{ algorithm, limit, periodMs, capacity }].
  get policies() {
    if (this.#policies === undefined) this.#policies = Object.freeze(this.#native.policies().map(Object.freeze));
    return this.#policies;
  }

  // Consumes `cost` (default 1) for `key` if every rate allows it. A denial resolves with allowed: false.
  hit(key, options) {
    if (!this.#inMemory) return this.#remote(HIT, this.hit, key, options);
    try {
      return Promise.resolve(this.#hitNow(key, options, this.hit));
    } catch (error) {
      return Promise.reject(fromCaller(error, this.hit));
    }
  }

  // What hit would decide, consuming nothing.
  peek(key, options) {
    if (!this.#inMemory) return this.#remote(PEEK, this.peek, key, options);
    try {
      this.#native.peekSync(key, costOf(options, this.peek));
      return Promise.resolve(decisionAt(this.#out, 0));
    } catch (error) {
      return Promise.reject(fromCaller(error, this.peek));
    }
  }

  // Forgets the key under every rate of the policy. Resolves with undefined.
  reset(key) {
    if (!this.#inMemory) return this.#remote(RESET, this.reset, key, undefined);
    try {
      return Promise.resolve(this.#native.resetSync(key));
    } catch (error) {
      return Promise.reject(fromCaller(error, this.reset));
    }
  }

  // Gives back up to `cost` of what was charged most recently on the key, in every rate (e.g. a login that
  // succeeded, when only failures should count: docs/algorithms.md, "Refunds"). Resolves with what peek decides
  // afterwards.
  refund(key, options) {
    if (!this.#inMemory) return this.#remote(REFUND, this.refund, key, options);
    try {
      this.#native.refundSync(key, costOf(options, this.refund));
      return Promise.resolve(decisionAt(this.#out, 0));
    } catch (error) {
      return Promise.reject(fromCaller(error, this.refund));
    }
  }

  // Charges a hit at the earliest instant, no later than maxWaitMs ahead (default: no bound), at which every rate
  // allows it (gcra and token_bucket; docs/pacing.md). Resolves with the decision and waitMs / waitUs: allowed, act
  // after waitMs; denied, the wait would exceed maxWaitMs and nothing was charged.
  reserve(key, options) {
    if (!this.#inMemory) return this.#remote(RESERVE, this.reserve, key, options);
    try {
      this.#native.reserveSync(key, costOf(options, this.reserve), maxWaitOf(options, this.reserve));
      return Promise.resolve(reservationAt(this.#out, 0));
    } catch (error) {
      return Promise.reject(fromCaller(error, this.reserve));
    }
  }

  // Gives the slot of `reservation` (reserve's decision for this key and cost) back. Resolves with true when it was
  // given back, which it is when nothing was charged on the key after it; otherwise the slot stays spent.
  cancel(key, reservation, options) {
    if (!this.#inMemory) return this.#remote(CANCEL, this.cancel, key, options, reservation);
    try {
      const { allowed, ticket } = reservationOf(reservation, this.cancel);
      return Promise.resolve(this.#native.cancelSync(key, costOf(options, this.cancel), allowed, ticket));
    } catch (error) {
      return Promise.reject(fromCaller(error, this.cancel));
    }
  }

  // One hit per key, in one round trip where the store can. Resolves with one decision per key. An invalid key
  // charges nothing.
  hitMany(keys, options) {
    if (!this.#inMemory) return this.#remote(HIT_MANY, this.hitMany, keys, options);
    try {
      return Promise.resolve(decisionList(this.#native.hitManySync(keys, costOf(options, this.hitMany))));
    } catch (error) {
      return Promise.reject(fromCaller(error, this.hitMany));
    }
  }

  // Waits for a slot: a reservation, then one timer (docs/pacing.md). Resolves with the reservation; rejects with a
  // RateLimitTimeoutError at once, charging nothing, when the wait would exceed timeoutMs, and with the signal's
  // reason when it is aborted (the slot is given back first, as limiter.cancel does).
  acquire(key, options) {
    return pacing.acquire(this, key, options, this.acquire);
  }

  // A paced version of the async function fn: each call acquires a slot of { key, cost, timeoutMs, signal } first.
  wrap(fn, options) {
    return pacing.wrap(this, fn, options, this.wrap);
  }

  // The memory store only: hit, answered synchronously.
  hitSync(key, options) {
    if (!this.#inMemory) throw syncOnNetwork(this.hitSync);
    try {
      return this.#hitNow(key, options, this.hitSync);
    } catch (error) {
      throw fromCaller(error, this.hitSync);
    }
  }

  // The memory store only: hit, answered synchronously with whether it is allowed (no decision object is made: the
  // addon writes only out[0]).
  allowSync(key, options) {
    if (!this.#inMemory) throw syncOnNetwork(this.allowSync);
    try {
      if (options === undefined) this.#allowSync(key);
      else this.#allowSync(key, costOf(options, this.allowSync));
    } catch (error) {
      throw fromCaller(error, this.allowSync);
    }
    return this.#out[0] === 1;
  }

  // A hit on the memory store, decided now. The addon checks the key's type itself: one JS check less on the
  // fastest path, and no cost argument to read in the usual case.
  #hitNow(key, options, method) {
    if (options === undefined) this.#hitSync(key);
    else this.#hitSync(key, costOf(options, method));
    return decisionAt(this.#out, 0);
  }

  // One asynchronous call of the core. Bad input throws in the addon before anything starts (the rejection's stack
  // starts at the caller); a store failure is created again after the await, so that V8's async stack trace leads
  // to the caller.
  async #remote(op, method, key, options, reservation) {
    let settle;
    const answer = new Promise((resolve) => {
      settle = resolve;
    });
    const id = calls.add(settle);
    try {
      const n = this.#native;
      // hit and peek answer `true` when the store decided at once (a hybrid mode's local knowledge), into #out.
      if (op === HIT || op === PEEK) {
        const cost = costOf(options, method);
        if ((op === HIT ? n.hit(key, cost, id) : n.peek(key, cost, id)) === true) {
          calls.remove(id);
          return decisionAt(this.#out, 0);
        }
      } else if (op === HIT_MANY) {
        n.hitMany(key, costOf(options, method), id);
      } else if (op === REFUND) {
        n.refund(key, costOf(options, method), id);
      } else if (op === RESERVE) {
        n.reserve(key, costOf(options, method), maxWaitOf(options, method), id);
      } else if (op === CANCEL) {
        const { allowed, ticket } = reservationOf(reservation, method);
        n.cancel(key, costOf(options, method), allowed, ticket, id);
      } else {
        n.reset(key, id);
      }
    } catch (error) {
      calls.remove(id);
      throw fromCaller(error, method);
    }
    const value = await answer;
    if (value instanceof Error) throw fromNative(value);
    return op === CANCEL ? value.allowed : value;
  }
}

function reservationOf(reservation, caller) {
  if (reservation === null || typeof reservation !== 'object' || typeof reservation.ticket !== 'number') {
    throw invalidArgument('reservation must be the decision limiter.reserve() resolved with', caller);
  }
  return reservation;
}

function syncOnNetwork(method) {
  return invalidArgument(`${method.name} works on the memory store only: use await limiter.hit() with a network store`,
    method);
}

module.exports = { Limiter };
