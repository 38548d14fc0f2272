'use strict';
// The HTTP limiters' log of their store's health, from the core's events (events.js) rather than from each request:
// when a store fails, each limiter on it writes one line saying what its requests get meanwhile, and one when the
// store answers again, saying how many requests met the failure — however many requests there were, instead of a
// line per limiter every logInterval. Limiters that write the same line to the same logger write it once. The core
// sends these events once per change of the store's health, at most one a second (with the count of those left
// out), so this log needs no rate limit of its own. Error replies (ERR_RATEWARDEN_STORE), which do not change a
// store's health, stay in each limiter's rate-limited log (http.js).

const { onEvent } = require('./events');

// Event store name -> Set<WeakRef<HttpLimiter>>: limiters live as long as the app that holds them.
const watched = new Map();
let listening = false;

// The name the core's events give a store: its describe(), except that a hybrid mode's calls are its shared
// store's, whose name is the hybrid's without the mode and sync it adds (docs/hybrid.md).
function eventName(store) {
  const { name, hybrid } = store.stats();
  return hybrid ? name.replace(/[?&]mode=(?:local_first|async)&sync=\d+ms$/, '') : name;
}

// One line per (logger, text) among the limiters on the event's store, with their counts summed.
function onStoreEvent(event) {
  if (event.kind !== 'store_failed' && event.kind !== 'store_recovered') return;
  const limiters = watched.get(event.store);
  if (limiters === undefined) return;
  const lines = new Map();  // logger -> Map<text, requests>
  for (const ref of limiters) {
    const limiter = ref.deref();
    if (limiter === undefined) {
      limiters.delete(ref);
      continue;
    }
    const outcome = limiter.failureOutcome;
    if (outcome === undefined) continue;
    let text;
    let requests = 0;
    if (event.kind === 'store_failed') {
      text = `ratewarden/${limiter.framework}: the store failed (${event.message}); requests are ${outcome} while it ` +
        'does';
    } else {
      // Its store errors since the last recovery: the requests that met this failure.
      requests = limiter.metrics.storeErrors - limiter.storeErrorsLogged;
      limiter.storeErrorsLogged = limiter.metrics.storeErrors;
      text = `ratewarden/${limiter.framework}: the store answers again (${event.store}); requests are limited again`;
    }
    let texts = lines.get(limiter.logger);
    if (texts === undefined) lines.set(limiter.logger, texts = new Map());
    texts.set(text, (texts.get(text) ?? 0) + requests);
  }
  if (limiters.size === 0) watched.delete(event.store);
  const more = event.suppressed ? ` (${event.suppressed} more changes since the last such line)` : '';
  for (const [logger, texts] of lines) {
    for (const [text, requests] of texts) {
      const met = event.kind === 'store_recovered' ? `; ${requests} request(s) met the failure meanwhile` : '';
      try {
        logger.warn(`${text}${met}${more}`);
      } catch {}  // a logger that throws loses its line; the process goes on
    }
  }
}

// Called by each HttpLimiter once made: its store's events reach it while it lives. The memory store never fails.
function watchStore(limiter) {
  if (limiter.store.inMemory) return;
  if (!listening) {
    onEvent(onStoreEvent);
    listening = true;
  }
  const name = eventName(limiter.store);
  let limiters = watched.get(name);
  if (limiters === undefined) watched.set(name, limiters = new Set());
  limiters.add(new WeakRef(limiter));
}

module.exports = { watchStore };
