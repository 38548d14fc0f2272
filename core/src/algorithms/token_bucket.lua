-- token_bucket (core/src/algorithms/token_bucket.cpp); p.extra is the burst B.
-- Redis layout: a HASH with fields c = the credit in µs of refill time, l = the last refill time in µs.
-- An absent key is a full bucket.

local function load_state(key, p)
  local v = redis.call('HMGET', key, 'c', 'l')
  return {credit = tonumber(v[1]), last = tonumber(v[2])}
end

local function evaluate(s, now, p, cost, hit)
  local t = idiv(p.period + p.limit - 1, p.limit)  -- µs per token, rounded up
  local cap = p.extra * t
  if s.credit == nil or s.last == nil then s.credit, s.last = cap, now end
  s.credit = math.min(cap, s.credit + math.max(0, now - s.last))
  s.last = math.max(s.last, now)

  local need = cost * t
  local allowed = s.credit >= need
  if allowed and hit then s.credit = s.credit - need end
  local remaining = idiv(s.credit, t)
  local retry_after = allowed and 0 or need - s.credit
  return {allowed, p.extra, remaining, cap - s.credit, retry_after, p.extra - remaining}, now + cap - s.credit
end

local function save_state(key, s, p, now, expires_at)
  save_fields(key, now, expires_at, 'c', fmt(s.credit), 'l', fmt(s.last))
end
