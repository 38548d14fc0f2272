'use strict';
// The calls in flight on network stores. Each one is known to the addon by an integer id: the addon holds no JS
// value per call, and settles calls in batches — one call of `complete` for every answer that arrived together
// (node/src/completions.hpp). An id is reused once its call has settled.

const native = require('./native');
const { FIELDS, decisionAt, decisionList, reservationAt } = require('./decision');

// One record per answer: id, kind, then a decision's FIELDS numbers (kind DECISION).
const RECORD = 2 + FIELDS;
const DECISION = 0;
const ERROR = 1;
const DECISIONS = 2;
const RESERVATION = 4;

const settles = [];  // by id: the resolve function of the call's promise
const free = [];

// Registers a call; `settle` gets its answer: a decision, an array of decisions, an Error, or undefined (reset).
function add(settle) {
  const id = free.length > 0 ? free.pop() : settles.length;
  settles[id] = settle;
  return id;
}

// The call did not start (the addon threw): its id is free again.
function remove(id) {
  settles[id] = undefined;
  free.push(id);
}

// Answers that arrive together mean the store is busy: the calls their callers make next (in the microtasks that
// follow this batch) leave together, with one wake-up of the I/O thread, instead of each waking it (limiter.hpp,
// hold_io_wakeups). The release is a nextTick queued from a microtask: it runs once the microtask queue is empty.
// A lone answer is left alone: its caller's next call leaves at once.
const HOLD_AT = 2 * RECORD;
const releaseWakeups = () => process.nextTick(native.releaseWakeups);

function complete(values, extras) {
  if (values.length >= HOLD_AT) {
    native.holdWakeups();
    queueMicrotask(releaseWakeups);
  }
  for (let i = 0, n = 0; i < values.length; i += RECORD, n++) {
    const id = values[i];
    const kind = values[i + 1];
    const settle = settles[id];
    settles[id] = undefined;
    free.push(id);
    if (kind === DECISION) settle(decisionAt(values, i + 2));
    else if (kind === ERROR) settle(extras[n]);
    else if (kind === DECISIONS) settle(decisionList(extras[n]));
    else if (kind === RESERVATION) settle(reservationAt(values, i + 2));
    else settle(undefined);
  }
}

// Answers that arrive while a batch is being settled are taken on the next turn of the loop, so that timers and
// sockets get their turn in between.
const drain = native.drainCompletions;
native.setCompletionHandler(complete, () => setImmediate(drain));

module.exports = { add, remove };
