// The algorithms: one row each, in one table. Everything else that lists algorithms is derived from it: the
// Algorithm enum and its names (policy.hpp, policy.cpp), which option a policy takes and how it shows in the storage
// key and in the scripts' arguments (policy.cpp), the state variant and its dispatch (algorithms.hpp,
// core/src/algorithms/table.cpp), the build's C++ and Lua lists and which fast paths each script opens with
// (cmake/algorithms.cmake reads the rows) and the names every binding offers (algorithm_names()).
// docs/architecture.md says how to add an algorithm.
//
// X(name, State, option, fast):
// - name: Algorithm::name, the pure function ratewarden::name in core/src/algorithms/name.cpp, its Lua twin
//   core/src/algorithms/name.lua, and the name in policies, Redis keys and every binding;
// - State: its state per key, declared in algorithms.hpp; State{} is the state of an absent key;
// - option: the one option it takes, AlgorithmOption::none, ::burst or ::buckets;
// - fast: whose fast paths, core/src/algorithms/<fast>_fast.lua, its script runs first (cmake/embed_lua.cmake), or
//   none. token_bucket runs gcra's: it stores the very number gcra stores (token_bucket.lua), and
//   core/src/redis/commands.cpp decodes their one-integer replies alike.
#pragma once

#define RATEWARDEN_ALGORITHMS(X)                                 \
  X(fixed_window, FixedWindowState, none, fixed_window)          \
  X(sliding_log, SlidingLogState, none, none)                    \
  X(sliding_window, SlidingWindowState, buckets, sliding_window) \
  X(token_bucket, TokenBucketState, burst, gcra)                 \
  X(gcra, GcraState, burst, gcra)
