-- gcra (core/src/algorithms/gcra.cpp); p.extra is the burst B.
-- Redis layout: a STRING holding the theoretical arrival time (TAT) in µs, with a TTL that ends at the TAT.

local function load_state(key, p, now)
  return {tat = tonumber(redis.call('GET', key)) or 0}  -- absent: 0, which max(tat, now) turns into now
end

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

local function save_state(key, s, p, now, expires_at)
  local ttl = ttl_ms(now, expires_at)
  if not ttl then return redis.call('DEL', key) end  -- a refund gave everything back
  redis.call('SET', key, fmt(s.tat), 'PX', ttl)
end

