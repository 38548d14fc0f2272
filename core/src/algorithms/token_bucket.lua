-- token_bucket (core/src/algorithms/token_bucket.cpp); p.extra is the burst B.
-- Redis layout: one number, a STRING holding the instant the bucket is full again (µs), with a TTL ending then.
-- The C++ state (credit, last) maps onto it as full_at = last + cap - credit; at `now` the credit is
-- cap - max(0, full_at - now) — the refill the C++ function computes, the same numbers as long as time moves forward
-- (a clock that goes back refills nothing in C++, and takes credit back here: docs/algorithms.md). An absent key is a
-- full bucket. This is gcra.lua's arithmetic with credit = tau - (tat - now): full_at is gcra's TAT, stored as gcra
-- stores it (fragments/tat_state.lua: load_state and save_state, s.tat).

--@fragment tat_state@

local function evaluate(s, now, p, cost, hit)
  local t = idiv(p.period + p.limit - 1, p.limit)  -- µs per token, rounded up
  local cap = p.extra * t
  local credit = cap - math.max(0, s.tat - now)
  local need = cost * t
  if refunding then credit = math.min(cap, credit + need) end
  local allowed = credit >= need
  if allowed and hit then credit = credit - need end
  s.tat = now + cap - credit  -- full_at
  local remaining = math.max(0, idiv(credit, t))
  return {allowed, p.extra, remaining, cap - credit, allowed and 0 or need - credit, p.extra - remaining}, s.tat
end
