// Exactness across processes: forked processes, each with threads, hit one key of a shared store.
#pragma once

#include <cstdint>
#include <string>

#include "ratewarden/ratewarden.hpp"

namespace ratewarden::testing {

// `processes` forked children each build their own limiter on `url` (after the fork: no connection is shared) and
// run `threads` threads of `hits` hits on "hot". Returns the hits allowed in total, or -1 if a child failed.
int64_t allowed_across_processes(const std::string& url, const std::string& policy, Algorithm algorithm,
                                 int processes = 8, int threads = 4, int hits = 60);

}  // namespace ratewarden::testing
