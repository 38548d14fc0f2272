'use strict';
// KeyList: a deny list or an allow list held in the store (docs/key-lists.md). The list is the core's
// (ratewarden/key_list.hpp), which checks its name and duration and makes its entries' policy and keys: Python's
// KeyList(name, store, duration=...) and the C ABI's rw_key_list_create with the same name and duration are the
// same list. Its calls go through a Limiter of that policy, asynchronously.

const native = require('./native');
const { Limiter } = require('./limiter');
const { Store, storeFor } = require('./store');
const { invalidArgument } = require('./errors');
const { knownOptions, show } = require('./options');

const MAX_DURATION_MS = 3650 * 86400 * 1000;  // the longest period a policy takes
const KNOWN = ['name', 'store', 'durationMs'];

class KeyList {
  #native;
  #limiter;

  // Keys held in `store`, each for `durationMs` from when it was added (default: 10 years, i.e. until removed):
  // every process of every runtime on the store sees an entry as soon as it is added. An entry is the state of a
  // one-hit fixed window of durationMs for the key itself, under the list's own prefix
  // "<store's prefix>:list:<name>".
  constructor(options = {}) {
    if (options === null || typeof options !== 'object') {
      const example = '{ name: "blocked", durationMs: 900000 }';
      throw invalidArgument(`KeyList options must be an object such as ${example}, got ${show(options)}`);
    }
    knownOptions('KeyList', options, KNOWN);
    const { name, store = 'memory://', durationMs = MAX_DURATION_MS } = options;
    // The core checks the range too, but in the microseconds it is given: here in the caller's ms.
    if (!(typeof durationMs === 'number' && durationMs >= 1 && durationMs <= MAX_DURATION_MS)) {
      const range = `from 1 to ${MAX_DURATION_MS} (3650 days)`;
      throw invalidArgument(`durationMs must be a number of ms ${range}, got ${show(durationMs)}`);
    }
    const s = storeFor(store);
    this.#native = new native.KeyList(name, Store.native(s), Math.ceil(durationMs * 1000));  // whole µs, rounded up
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
