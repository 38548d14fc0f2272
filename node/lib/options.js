'use strict';
// Validation of the Limiter's options: every message names the option.

const { invalidArgument } = require('./errors');
const native = require('./native');

const ALGORITHMS = native.algorithms(); // the core's table of algorithms
const ON_STORE_ERROR = ['raise', 'allow', 'deny'];
const KNOWN = ['policy', 'store', 'algorithm', 'burst', 'buckets', 'prefix', 'onStoreError', 'name'];

function show(value) {
  return typeof value === 'string' ? JSON.stringify(value) : String(value);
}

// Refuses the first key of `options` that is not `known`, naming them all: a misspelt option (or another binding's
// spelling of it) would otherwise be a default silently.
function knownOptions(what, options, known) {
  const unknown = Object.keys(options).find((k) => !known.includes(k));
  if (unknown !== undefined) throw invalidArgument(`unknown ${what} option "${unknown}" (known: ${known.join(', ')})`);
}

function oneOf(name, value, allowed) {
  if (value !== undefined && !allowed.includes(value)) {
    throw invalidArgument(`${name} must be one of ${allowed.map((a) => `"${a}"`).join(', ')}, got ${show(value)}`);
  }
}

// Its range is the core's to check, with the same message in every language.
function integer(name, value) {
  if (value !== undefined && !Number.isSafeInteger(value)) throw invalidArgument(`${name} must be an integer, got ${show(value)}`);
}

function limiterOptions(options) {
  if (options === null || typeof options !== 'object') {
    throw invalidArgument('Limiter options must be an object such as { policy: "100/minute" }');
  }
  knownOptions('Limiter', options, KNOWN);
  const { policy, store = 'memory://', algorithm, burst, buckets, prefix, onStoreError, name } = options;
  if (typeof policy !== 'string' || policy.trim() === '') {
    throw invalidArgument(`policy must be a string such as "100/minute" or "10/second; 1000/hour", got ${show(policy)}`);
  }
  oneOf('algorithm', algorithm, ALGORITHMS);
  integer('burst', burst);
  integer('buckets', buckets);
  if (prefix !== undefined && typeof prefix !== 'string') throw invalidArgument(`prefix must be a string, got ${show(prefix)}`);
  oneOf('onStoreError', onStoreError, ON_STORE_ERROR);
  // Its length (1 to 200 bytes) is the core's to check.
  if (name !== undefined && typeof name !== 'string') throw invalidArgument(`name must be a string, got ${show(name)}`);
  return { policy, store, native: { algorithm, burst, buckets, prefix, onStoreError, name } };
}

// The cost of one call: { cost } (default 1). Only the options object is checked here: the addon checks that the
// cost is an integer and the core that it is between 1 and the capacity.
function costOf(options, caller) {
  if (options === undefined) return 1;
  if (options === null || typeof options !== 'object') {
    throw invalidArgument(`options must be an object such as { cost: 2 }, got ${show(options)}`, caller);
  }
  return options.cost === undefined ? 1 : options.cost;
}

// A reservation's longest wait, in µs for the addon: { maxWaitMs } (default: no bound, Infinity).
function maxWaitOf(options, caller) {
  const ms = options === undefined || options === null ? undefined : options.maxWaitMs;
  if (ms === undefined || ms === Infinity) return Infinity;
  if (typeof ms !== 'number' || !(ms >= 0)) {
    throw invalidArgument(`maxWaitMs must be a number >= 0 (or Infinity), got ${show(ms)}`, caller);
  }
  return Math.floor(ms * 1000);  // never a longer wait than asked
}

module.exports = { limiterOptions, costOf, maxWaitOf, knownOptions, show };
