// Events: what an operator must not miss, delivered without flooding (docs/observability.md). A store that fails
// and recovers, a circuit that opens and closes, a fork, live keys evicted, a hybrid lease that expired.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace ratewarden {

enum class EventKind {
  store_failed,     // a call failed for want of the store (unavailable or timed out) after calls that did not
  store_recovered,  // the store answered again after store_failed
  circuit_opened,   // a server's circuit breaker opened: its calls fail at once for the back-off
  circuit_closed,   // ... and closed: a probe got an answer
  fork_detected,    // a forked child made its first call: it opened its own connections
  live_evictions,   // the memory store (or a hybrid mode's knowledge) dropped live keys to stay within its bound
  lease_expired,    // async mode: a lease ran out before it was used up, its rest given back to nobody
};
inline constexpr int kEventKinds = 7;
const char* event_kind_name(EventKind kind);  // "store_failed", ...
bool is_warning(EventKind kind);              // the ones a log shows as warnings (failures, openings, evictions)

struct Event {
  EventKind kind;
  std::string store;     // the store's name (its URL, password masked); empty for fork_detected
  std::string message;   // what happened, for a log line
  int64_t suppressed = 0;  // events of this kind and store not delivered since the last one (the rate limit)
};

// The process's one event handler; an empty function removes it. Called on the library's callback thread, one
// event at a time, in order (never under a lock of the library's: it may call anything, and block — delaying
// other events and library_thread completions). At most one event per kind and store in any second: the others
// are counted in the next one's `suppressed`, and a transition back (store_recovered, circuit_closed) always
// follows the one it answers, however soon.
using EventHandler = std::function<void(const Event& event)>;
void set_event_handler(EventHandler handler);

}  // namespace ratewarden
