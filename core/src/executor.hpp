// The library's thread pool for asynchronous calls (internal).
#pragma once

#include <functional>

namespace ratewarden {

// Runs `task` on one of up to 64 library threads, started on demand. Tasks queued when the process exits still run
// before the pool's threads are joined.
void run_on_pool(std::function<void()> task);

}  // namespace ratewarden
