'use strict';
// Waiting for one's turn (docs/pacing.md): acquire and wrap over the core's reservations. A reservation charges the
// store now for a slot that may lie in the future and tells how long to wait for it; here we only wait that long,
// on one timer of the event loop: no polling, no retry. Callers in every process are served in the order their
// reservations reach the store.

const { codes, invalidArgument } = require('./errors');

// setTimeout fires at once (with a warning) past 2^31 - 1 ms: longer waits are chained.
const MAX_TIMER_MS = 2 ** 31 - 1;

class RateLimitTimeoutError extends Error {
  // The wait for a slot would be longer than timeoutMs: rejected at once, and nothing was charged. `decision` is the
  // refusal (retryAfterMs: the wait that would have been needed).
  // (A limiter with onStoreError: 'deny' rejects with it too, timeoutMs undefined, when the store fails: its answer
  // is then a refusal.)
  constructor(key, decision, timeoutMs) {
    const wait = `waiting for ${describeKey(key)} would take ${decision.retryAfterMs} ms`;
    super(timeoutMs === undefined ? `${wait}: the store failed and onStoreError is "deny"`
      : `${wait}, more than the timeout of ${timeoutMs} ms`);
    this.name = 'RateLimitTimeoutError';
    this.code = codes.RATE_LIMIT_TIMEOUT;
    this.decision = decision;
    this.timeoutMs = timeoutMs;
  }
}

function describeKey(key) {
  return typeof key === 'string' ? JSON.stringify(key) : `a key of ${key?.length} bytes`;
}

function show(value) {
  return typeof value === 'string' ? JSON.stringify(value) : String(value);
}

function checkTimeout(timeoutMs, caller) {
  if (timeoutMs !== undefined && !(typeof timeoutMs === 'number' && timeoutMs >= 0)) {
    throw invalidArgument(`timeoutMs must be a number of ms >= 0 (or undefined: no limit), got ${show(timeoutMs)}`,
      caller);
  }
}

function checkSignal(signal, caller) {
  if (signal !== undefined && !(signal instanceof AbortSignal)) {
    throw invalidArgument(`signal must be an AbortSignal, got ${show(signal)}`, caller);
  }
}

function acquireOptions(options, caller) {
  if (options === undefined) return {};
  if (options === null || typeof options !== 'object') {
    throw invalidArgument(`options must be an object such as { cost: 1, timeoutMs: 5000 }, got ${show(options)}`,
      caller);
  }
  checkTimeout(options.timeoutMs, caller);
  checkSignal(options.signal, caller);
  return options;
}

// One 'abort' listener per signal, whatever the number of calls waiting on it: a signal shared by many calls (a
// shutdown signal, wrap's) would otherwise pass EventTarget's leak-warning threshold. Returns the unsubscribe.
const watchers = new WeakMap(); // signal -> { callbacks: Set, fire }

function onAbort(signal, callback) {
  let watcher = watchers.get(signal);
  if (watcher === undefined) {
    const callbacks = new Set();
    const fire = () => {
      watchers.delete(signal);
      for (const c of callbacks) c();
    };
    watcher = { callbacks, fire };
    watchers.set(signal, watcher);
    signal.addEventListener('abort', fire, { once: true });
  }
  watcher.callbacks.add(callback);
  return () => {
    watcher.callbacks.delete(callback);
    if (watcher.callbacks.size === 0 && watchers.get(signal) === watcher) {
      watchers.delete(signal);
      signal.removeEventListener('abort', watcher.fire);
    }
  };
}

// Calls done after ms, on one timer (chained past MAX_TIMER_MS). Returns the function that cancels it.
function after(ms, done) {
  let timer;
  const arm = (left) => {
    timer = setTimeout(() => (left > MAX_TIMER_MS ? arm(left - MAX_TIMER_MS) : done()), Math.min(left, MAX_TIMER_MS));
  };
  arm(ms);
  return () => clearTimeout(timer);
}

// Gives back the slot of a wait that was aborted. Its failure is only a warning: the abort is what the caller
// asked for, and a slot left spent only delays later callers.
async function giveBack(limiter, key, decision, cost) {
  if (!decision.ticket) return; // a slot that cannot be given back (several rates): no round trip
  try {
    await limiter.cancel(key, decision, { cost });
  } catch (error) {
    process.emitWarning(`the slot of an aborted wait for ${describeKey(key)} was not given back: ${error.message}`,
      { code: 'RATEWARDEN_CANCEL_FAILED' });
  }
}

// The reservation's decision, once its slot has come. Whichever comes first of the abort and the end of the wait
// decides, so a caller that goes on never has its slot given back, and an aborted one always has (once): aborted
// while the reservation is on its way, it rejects at once and the slot goes back when the answer comes; aborted
// during the wait, the slot goes back, then it rejects (docs/pacing.md, "Giving a slot back").
function waitForSlot(reserving, signal, limiter, key, cost) {
  return new Promise((resolve, reject) => {
    let decision; // the reservation's, once its answer has come
    let cancelTimer = () => {};
    let settled = false;
    const unsubscribe = signal ? onAbort(signal, () => {
      settled = true;
      cancelTimer();
      if (decision === undefined) {
        reject(signal.reason);
        reserving.then((d) => d.allowed && giveBack(limiter, key, d, cost), () => {});
      } else {
        giveBack(limiter, key, decision, cost).then(() => reject(signal.reason));
      }
    }) : () => {};
    const settle = (outcome, value) => {
      if (settled) return;
      settled = true;
      unsubscribe();
      outcome(value);
    };
    reserving.then((d) => {
      if (settled) return;
      decision = d;
      if (d.allowed && d.waitUs > 0) cancelTimer = after(d.waitMs, () => settle(resolve, d));
      else settle(resolve, d);
    }, (error) => settle(reject, error));
  });
}

// limiter.acquire(key, { cost, timeoutMs, signal }): waits for a slot, resolves with its reservation.
async function acquire(limiter, key, options, caller) {
  const { cost, timeoutMs, signal } = acquireOptions(options, caller);
  signal?.throwIfAborted(); // before anything is charged; from here on, the signal is watched
  // A refusal with a timeout given is the timeout's, or the store's (onStoreError 'deny'): the limiter's fallbacks,
  // which count the decisions made because the store failed, tell which. (They count under the limiter's name: a
  // fallback of another call of that name meanwhile would blame the store for a real timeout, in the message only.)
  const fallbacks = timeoutMs === undefined ? 0 : limiter.stats().fallbacks;
  const reserving = limiter.reserve(key, timeoutMs === undefined ? { cost } : { cost, maxWaitMs: timeoutMs });
  const decision = await waitForSlot(reserving, signal, limiter, key, cost);
  if (!decision.allowed) {
    const storeFailed = timeoutMs !== undefined && limiter.stats().fallbacks > fallbacks;
    throw new RateLimitTimeoutError(key, decision, storeFailed ? undefined : timeoutMs);
  }
  return decision;
}

// limiter.wrap(fn, { key, cost, timeoutMs, signal }): fn, each call of which first acquires a slot. `key` is a key
// or a function of the call's arguments (called with the call's `this`).
function wrap(limiter, fn, options, caller) {
  if (typeof fn !== 'function') {
    throw invalidArgument(`wrap(fn, options): fn must be a function, got ${show(fn)}`, caller);
  }
  if (options === null || typeof options !== 'object') {
    throw invalidArgument('wrap(fn, options): options must be an object such as { key: "partner-api" }', caller);
  }
  const { key, cost, timeoutMs, signal } = options;
  if (!(typeof key === 'string' || typeof key === 'function' || key instanceof Uint8Array)) {
    throw invalidArgument(`wrap: key must be a string, a Buffer or a function of the arguments, got ${show(key)}`,
      caller);
  }
  checkTimeout(timeoutMs, caller);
  checkSignal(signal, caller);
  const each = { cost, timeoutMs, signal };
  const paced = async function (...args) {
    await acquire(limiter, typeof key === 'function' ? key.apply(this, args) : key, each, paced);
    return fn.apply(this, args);
  };
  Object.defineProperty(paced, 'name', { value: `paced ${fn.name}`.trimEnd() });
  return paced;
}

module.exports = { RateLimitTimeoutError, acquire, wrap };
