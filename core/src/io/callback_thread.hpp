// The library's callback thread: where completions that asked for Completion::library_thread run (internal).
//
// Such a callback may block and may call anything in the library, synchronous calls included: it runs on neither
// the caller's thread nor the I/O thread, so waiting there never stops the I/O it waits for. Started on first use;
// a forked child starts its own.
#pragma once

#include <functional>

namespace ratewarden {

void run_on_callback_thread(std::function<void()> task);

}  // namespace ratewarden
