// What every network store (Redis, Redis Cluster, PostgreSQL) takes alike, and reads alike from its URL:
// ?timeout=, ?connect_timeout=, ?pool=, ?circuit_failures= and ?circuit_backoff= (docs/deployment.md).
#pragma once

#include <cstdint>

namespace ratewarden {

struct NetworkOptions {
  // Every call ends within this time, with a decision or a StoreError (docs/deployment.md: why 250 ms for Redis).
  int64_t timeout_us = 250000;
  int64_t connect_timeout_us = 1000000;
  int pool = 4;  // connections at most (per server)
  // The circuit breaker: after this many failures in a row for want of the server, calls fail at once for
  // circuit_backoff, then one probe decides. 0 turns it off.
  int circuit_failures = 3;
  int64_t circuit_backoff_us = 1000000;
};

}  // namespace ratewarden
