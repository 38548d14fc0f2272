'use strict';
// Scopes: which counters an HTTP limiter counts on. The counted key is `<scope>:<key>`, on every store, so each
// limiter (each Express/Koa middleware instance, each Fastify route limit) counts on its own unless limiters name
// one shared scope — the same rule on the memory store and on Redis, where counters outlive the process and are
// shared by every process of a fleet.
//
// A named scope on a memory:// URL is one memory store for the limiters that name it (scopedStore).
//
// Without a `scope` option the scope is made from what the limiter counts (its rates, algorithm and key spec; a key
// function by its source text), plus the rank of that limiter among the process's limiters with the same
// description: "~3f9a1c22d0.1", "~3f9a1c22d0.2". Every process of a fleet that runs the same code, creating its
// limiters at start-up in the same order, makes the same names, and an unrelated limiter added elsewhere does not
// shift them. A named scope is shared on purpose: limiters that name it on one store must count the same thing
// (else the set-up is ambiguous and the second is refused), and a request met by several of them counts once.

const crypto = require('node:crypto');
const { invalidArgument } = require('./errors');
const { Store } = require('./store');

const NAME = /^[A-Za-z0-9_.-]{1,64}$/;

const ranks = new Map();  // description digest -> limiters made with it so far
// Core store identity -> { holder: WeakRef<Store>, scopes: Map<scope, { signature, token }> }. Limiters given one URL
// have Store objects of their own around one core store (store.js, storeFor): scopes follow the core store. An entry
// whose holder is gone is made again: its store may be gone too, and its address another store's now.
const named = new Map();

function scopesOf(store) {
  const id = Store.native(store).identity;
  let entry = named.get(id);
  if (entry === undefined || entry.holder.deref() === undefined) {
    named.set(id, entry = { holder: new WeakRef(store), scopes: new Map() });
  }
  return entry.scopes;
}

// `signature`: what the limiter counts, as text. Returns { scope, token }: token is one object per (store, scope),
// by which a request knows the counters it was counted on already.
function scopeFor(explicit, signature, store) {
  if (explicit === undefined) {
    const digest = crypto.createHash('sha256').update(signature).digest('hex').slice(0, 10);
    const rank = (ranks.get(digest) || 0) + 1;
    ranks.set(digest, rank);
    return { scope: `~${digest}.${rank}`, token: {} };
  }
  if (typeof explicit !== 'string' || !NAME.test(explicit)) {
    throw invalidArgument(`scope must be 1 to 64 letters, digits, "_", "." or "-", got ${JSON.stringify(explicit)}`);
  }
  const scopes = scopesOf(store);
  const prior = scopes.get(explicit);
  if (prior === undefined) {
    const entry = { signature, token: {} };
    scopes.set(explicit, entry);
    return { scope: explicit, token: entry.token };
  }
  if (prior.signature !== signature) {
    throw invalidArgument(`scope "${explicit}" is named by two limiters on one store that count differently ` +
      `(${prior.signature} | ${signature}): a shared scope is one count, so give these limiters the same policy ` +
      'and key, or different scopes');
  }
  return { scope: explicit, token: prior.token };
}

// The store of a limiter that names a scope. A memory:// URL opens a store of the limiter's own, so limiters naming
// one scope would not share its count there as they do on Redis: they get one memory store per (URL, scope).
const memoryStores = new Map();
function scopedStore(store, scope) {
  const url = store === undefined ? 'memory://' : store;
  if (scope === undefined || typeof url !== 'string' || !url.startsWith('memory:')) return store;
  const id = `${scope} ${url}`;
  let s = memoryStores.get(id);
  if (s === undefined) memoryStores.set(id, s = new Store(url));
  return s;
}

module.exports = { scopeFor, scopedStore };
