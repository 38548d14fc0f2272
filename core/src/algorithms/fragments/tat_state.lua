-- gcra's and token_bucket's Redis layout, one number: a STRING holding an instant in µs, s.tat, with a TTL that
-- ends then — gcra's theoretical arrival time, which is the instant token_bucket's bucket is full again
-- (token_bucket.lua).
-- An absent key reads as 0, which both take as "now": max(tat, now), a full bucket. Spliced as text by
-- cmake/embed_lua.cmake into gcra.lua and token_bucket.lua: their load_state and save_state (prelude.lua: ttl_ms,
-- fmt). gcra_fast.lua reads and writes the same number. Its twins are the states of gcra.cpp and token_bucket.cpp
-- (the bucket's {credit, last} maps onto the instant: token_bucket.lua); tests/conformance/vectors.json and
-- tests/core/differential_test.cpp bind them.
local function load_state(key, p, now)
  return {tat = tonumber(redis.call('GET', key)) or 0}
end

local function save_state(key, s, p, now, expires_at)
  local ttl = ttl_ms(now, expires_at)
  if not ttl then return redis.call('DEL', key) end  -- a refund gave everything back
  redis.call('SET', key, fmt(s.tat), 'PX', ttl)
end
