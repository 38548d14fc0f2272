// The algorithms: one row each, in one table. Everything else that lists algorithms is derived from it: the
// Algorithm enum and its names (policy.hpp, policy.cpp), which option a policy takes and how it shows in the storage
// key and in the scripts' arguments (policy.cpp), the state variant and its dispatch (algorithms.hpp,
// core/src/algorithms/table.cpp), the build's C++ and Lua lists (core/CMakeLists.txt reads the rows) and the names
// every binding offers (algorithm_names()). docs/architecture.md says how to add an algorithm.
//
// X(name, State, option):
// - name: Algorithm::name, the pure function ratewarden::name in core/src/algorithms/name.cpp, its Lua twin
//   core/src/algorithms/name.lua, and the name in policies, Redis keys and every binding;
// - State: its state per key, declared in algorithms.hpp; State{} is the state of an absent key;
// - option: the one option it takes, AlgorithmOption::none, ::burst or ::buckets.
#pragma once

#define RATEWARDEN_ALGORITHMS(X)                 \
  X(fixed_window, FixedWindowState, none)        \
  X(sliding_log, SlidingLogState, none)          \
  X(sliding_window, SlidingWindowState, buckets) \
  X(token_bucket, TokenBucketState, burst)       \
  X(gcra, GcraState, burst)
