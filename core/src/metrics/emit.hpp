// Where the library's events come from (internal; ratewarden/events.hpp says what the handler gets).
#pragma once

#include <string>

#include "ratewarden/events.hpp"

namespace ratewarden {

// Hands the event to the handler, if one is set, on the callback thread — at once, or at the end of the second of
// the last event of its kind and `source` (default: the store) with the ones it replaced counted. Cheap when no
// handler is set; never blocks on the handler. A store failing and recovering share one rate limit (so that the
// last delivered is the store's state), as a circuit opening and closing do.
void emit_event(EventKind kind, const std::string& store, std::string message, const std::string& source = {});

}  // namespace ratewarden
