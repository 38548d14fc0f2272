-- combine_decisions: which policy a call on several policies reports. Among the policies whose `allowed` agrees with
-- the call's outcome `all_allowed`: the largest retry_after, then the lowest remaining, then the first (an allowed
-- call reports the lowest remaining; a denial, the policy that holds the caller back longest). Spliced as text by
-- cmake/embed_lua.cmake into the loop `for i = 1, n` of decide_all.lua and of each <algorithm>_fast.lua, where
-- allowed, retry_after and remaining are policy i's; the choice so far is index (nil before the first), best_retry
-- and best_remaining. Its twins: combine_decisions in decide_all.cpp (the reference) and rw1_combine in
-- core/src/postgres/decide.sql; tests/conformance/vectors.json and tests/core/differential_test.cpp bind the three.
if allowed == all_allowed and
   (index == nil or retry_after > best_retry or (retry_after == best_retry and remaining < best_remaining)) then
  index, best_retry, best_remaining = i, retry_after, remaining
end
