'use strict';
// The core's events (docs/node.md, "Figures and events"): a store that fails and recovers, a circuit that opens
// and closes, a fork, live keys evicted, a lease that expired. Each is published on the diagnostics_channel
// channel `ratewarden:event` and emitted as 'event' by `events`, the package's EventEmitter, on the loop of every
// environment (the main thread, each worker thread) that loaded the package — the stores are the process's, so each
// environment sees every event. The core sends at most one event per kind and store in a second, counting the
// ones it left out in the next one's `suppressed`: no listener needs a rate limit of its own.
//
//   require('ratewarden').events.on('event', (e) => { if (e.warning) log.warn(`${e.kind}: ${e.message}`); });
//   require('node:diagnostics_channel').subscribe('ratewarden:event', (e) => ...);
//
// An event: { kind, store, message, suppressed, warning } — kind: 'store_failed', 'store_recovered',
// 'circuit_opened', 'circuit_closed', 'fork_detected', 'live_evictions' or 'lease_expired'; store: the store's
// name (its URL, password masked; '' for fork_detected); warning: whether a log shows it as a warning (failures,
// openings, evictions). Nothing here keeps the process alive.

const { EventEmitter } = require('node:events');
const diagnosticsChannel = require('node:diagnostics_channel');
const native = require('./native');

const CHANNEL = 'ratewarden:event';
const channel = diagnosticsChannel.channel(CHANNEL);
const events = new EventEmitter();
// The package's own listeners (the HTTP adapters' store log), apart from the user's: events.removeAllListeners()
// does not silence them.
const internal = new Set();

native.setEventHandler((kind, store, message, suppressed, warning) => {
  const event = Object.freeze({ kind, store, message, suppressed, warning });
  try {
    for (const listener of internal) listener(event);
    if (channel.hasSubscribers) channel.publish(event);
    events.emit('event', event);
  } catch (error) {
    // A listener that throws is an uncaught exception, as from any emitter. Thrown from here, into the addon's
    // callback, Node would only print a deprecation warning (DEP0168) unless run with
    // --force-node-api-uncaught-exceptions-policy.
    process.nextTick(() => {
      throw error;
    });
  }
});

// For the package's modules: `listener(event)` for every event until the returned function is called.
function onEvent(listener) {
  internal.add(listener);
  return () => internal.delete(listener);
}

module.exports = { events, onEvent, CHANNEL };
