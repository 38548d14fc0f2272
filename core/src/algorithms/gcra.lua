-- gcra (core/src/algorithms/gcra.cpp); p.extra is the burst B.
-- Redis layout: a STRING holding the theoretical arrival time (TAT) in µs, with a TTL that ends at the TAT
-- (fragments/tat_state.lua: load_state and save_state, shared with token_bucket.lua).

--@fragment tat_state@

local function evaluate(s, now, p, cost, hit)
  local t = idiv(p.period + p.limit - 1, p.limit)  -- µs per token, rounded up
  local tau = p.extra * t
  local tat = math.max(refunding and s.tat - cost * t or s.tat, now)
  local next_tat = tat + cost * t

  local allowed = next_tat - now <= tau
  s.tat = (allowed and hit) and next_tat or tat
  local remaining = math.max(0, idiv(tau - (s.tat - now), t))
  local retry_after = allowed and 0 or next_tat - now - tau
  return {allowed, p.extra, remaining, s.tat - now, retry_after, p.extra - remaining}, s.tat
end
