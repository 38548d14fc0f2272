-- token_bucket (core/src/algorithms/token_bucket.cpp); p.extra is the burst B.
-- Redis layout: one number, a STRING holding the instant the bucket is full again (µs), with a TTL ending then.
-- The C++ state (credit, last) maps onto it as full_at = last + cap - credit; at `now` the credit is
-- cap - max(0, full_at - now) — the refill the C++ function computes, the same numbers as long as time moves forward
-- (a clock that goes back refills nothing in C++, and takes credit back here: docs/algorithms.md). An absent key is a
-- full bucket. This is gcra.lua's arithmetic with credit = tau - (tat - now).

local function load_state(key, p, now)
  return {full_at = tonumber(redis.call('GET', key)) or 0}  -- absent: full
end

local function evaluate(s, now, p, cost, hit)
  local t = idiv(p.period + p.limit - 1, p.limit)  -- µs per token, rounded up
  local cap = p.extra * t
  local credit = cap - math.max(0, s.full_at - now)
  local need = cost * t
  if refunding then credit = math.min(cap, credit + need) end
  local allowed = credit >= need
  if allowed and hit then credit = credit - need end
  s.full_at = now + cap - credit
  local remaining = math.max(0, idiv(credit, t))
  return {allowed, p.extra, remaining, cap - credit, allowed and 0 or need - credit, p.extra - remaining}, s.full_at
end

local function save_state(key, s, p, now, expires_at)
  local ttl = ttl_ms(now, expires_at)
  if not ttl then return redis.call('DEL', key) end  -- a refund gave everything back
  redis.call('SET', key, fmt(s.full_at), 'PX', ttl)
end

