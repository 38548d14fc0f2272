'use strict';
// KeyList: a deny list or an allow list held in the store (docs/key-lists.md). Python's KeyList(name, store,
// duration=...) with the same name and duration is the same list.

const { Limiter } = require('./limiter');
const { invalidArgument } = require('./errors');

const NAME = /^[A-Za-z0-9_.-]{1,64}$/;
const MAX_DURATION_MS = 3650 * 86400 * 1000;  // the longest period a policy takes

// One hit per durationMs, in whole ms, or whole seconds past the 10^9 a period count may be (Python's _lists.py
// writes the same).
function policyOf(durationMs) {
  const ms = Math.ceil(durationMs);
  return ms <= 1e9 ? `1/${ms}ms` : `1/${Math.ceil(ms / 1000)}s`;
}

class KeyList {
  #limiter;
  #head;

  // Keys held in `store`, each for `durationMs` from when it was added (default: 10 years, i.e. until removed):
  // every process of every runtime on the store sees an entry as soon as it is added. An entry is the state of a
  // one-hit fixed window of durationMs under the store's key prefix, for the key "list:<name>:<key>".
  constructor({ name, store = 'memory://', durationMs = MAX_DURATION_MS } = {}) {
    if (typeof name !== 'string' || !NAME.test(name)) {
      throw invalidArgument(`a KeyList name is 1 to 64 letters, digits, "_", "." or "-", got ${JSON.stringify(name)}`);
    }
    if (typeof durationMs !== 'number' || !(durationMs >= 1 && durationMs <= MAX_DURATION_MS)) {
      throw invalidArgument(`durationMs must be from 1 to ${MAX_DURATION_MS}, got ${String(durationMs)}`);
    }
    this.name = name;
    this.durationMs = durationMs;
    this.#head = Buffer.from(`list:${name}:`);
    this.#limiter = new Limiter({ policy: policyOf(durationMs), store, algorithm: 'fixed_window' });
  }

  get store() {
    return this.#limiter.store;
  }

  #key(key) {
    if (typeof key === 'string') return Buffer.concat([this.#head, Buffer.from(key)]);
    if (key instanceof Uint8Array) return Buffer.concat([this.#head, key]);
    throw invalidArgument(`key must be a string or a Buffer, got ${typeof key}`);
  }

  // Adds the key for durationMs from now (again from now if it was there).
  async add(key) {
    const k = this.#key(key);
    await this.#limiter.reset(k);
    await this.#limiter.hit(k);
  }

  async remove(key) {
    await this.#limiter.reset(this.#key(key));
  }

  async has(key) {
    return !(await this.#limiter.peek(this.#key(key))).allowed;
  }

  // Milliseconds until the key's entry ends (rounded up); 0 when it is not in the list.
  async expiresInMs(key) {
    return (await this.#limiter.peek(this.#key(key))).retryAfterMs;
  }
}

module.exports = { KeyList };
