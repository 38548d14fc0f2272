'use strict';
// KeyList: a deny list or an allow list held in the store (docs/key-lists.md). The list is the core's
// (ratewarden/key_list.hpp), which checks its name and duration and makes its entries' policy and keys: Python's
// KeyList(name, store, duration=...) and the C ABI's rw_key_list_create with the same name and duration are the
// same list. Its calls go through a Limiter of that policy, asynchronously.

const native = require('./native');
const { Limiter } = require('./limiter');
const { Store, storeFor } = require('./store');
const { invalidArgument } = require('./errors');

const MAX_DURATION_MS = 3650 * 86400 * 1000;  // the longest period a policy takes

class KeyList {
  #native;
  #limiter;

  // Keys held in `store`, each for `durationMs` from when it was added (default: 10 years, i.e. until removed):
  // every process of every runtime on the store sees an entry as soon as it is added. An entry is the state of a
  // one-hit fixed window of durationMs for the key itself, under the list's own prefix
  // "<store's prefix>:list:<name>".
  constructor({ name, store = 'memory://', durationMs = MAX_DURATION_MS } = {}) {
    if (typeof durationMs !== 'number' || !Number.isFinite(durationMs)) {
      throw invalidArgument(`durationMs must be a finite number, got ${String(durationMs)}`);
    }
    const s = storeFor(store);
    // Whole microseconds, rounded up; past 3650 days it is refused, whatever its size.
    const us = durationMs > 0 ? Math.min(Math.ceil(durationMs * 1000), 2 ** 53 - 1) : 0;
    this.#native = new native.KeyList(name, Store.native(s), us);
    this.name = name;
    this.durationMs = durationMs;
    this.#limiter = new Limiter({
      policy: this.#native.policy,
      store: s,
      algorithm: 'fixed_window',
      prefix: this.#native.prefix,
      name: `list:${name}`,
    });
  }

  get store() {
    return this.#limiter.store;
  }

  // Adds the key for durationMs from now (again from now if it was there).
  async add(key) {
    await this.#limiter.reset(key);
    await this.#limiter.hit(key);
  }

  async remove(key) {
    await this.#limiter.reset(key);
  }

  async has(key) {
    return (await this.expiresInMs(key)) > 0;  // as the core's contains
  }

  // Milliseconds until the key's entry ends (rounded up); 0 when it is not in the list.
  async expiresInMs(key) {
    return (await this.#limiter.peek(key)).retryAfterMs;
  }
}

module.exports = { KeyList };
