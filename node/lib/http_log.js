'use strict';
// Warnings of an HTTP limiter, rate-limited: a store that is down fails every request, and one line per request
// would flood the log (and cost more than the request). Each kind of event is written at most once per interval,
// with the number of the same events left unwritten since the last line.

class ThrottledLog {
  constructor(logger, prefix, intervalMs) {
    this.logger = logger;
    this.prefix = prefix;
    this.intervalMs = intervalMs;
    this.kinds = new Map();  // kind -> { last, suppressed }
  }

  warn(kind, message) {
    const now = Date.now();
    let k = this.kinds.get(kind);
    if (k === undefined) this.kinds.set(kind, k = { last: -Infinity, suppressed: 0 });
    if (now - k.last < this.intervalMs) {
      k.suppressed++;
      return;
    }
    const more = k.suppressed ? ` (${k.suppressed} more like it since the last such line)` : '';
    k.last = now;
    k.suppressed = 0;
    this.logger.warn(`${this.prefix}: ${message}${more}`);
  }
}

module.exports = { ThrottledLog };
