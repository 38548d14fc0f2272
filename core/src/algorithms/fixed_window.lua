-- fixed_window (core/src/algorithms/fixed_window.cpp).
-- Redis layout: a HASH with fields c = the count, s = the window start in µs.

local function load_state(key, p)
  local v = redis.call('HMGET', key, 'c', 's')
  return {count = tonumber(v[1]) or 0, start = tonumber(v[2]) or 0}
end

local function evaluate(s, now, p, cost, hit)
  -- An empty or expired window restarts at now.
  if s.count <= 0 or now >= s.start + p.period then s.count, s.start = 0, now end
  local allowed = s.count + cost <= p.limit
  if allowed and hit then s.count = s.count + cost end
  local window_left = s.start + p.period - now
  local reset_after = s.count > 0 and window_left or 0
  local expires_at = s.count > 0 and s.start + p.period or now
  return {allowed, p.limit, p.limit - s.count, reset_after, allowed and 0 or window_left, s.count}, expires_at
end

local function save_state(key, s, p, now, expires_at)
  save_fields(key, now, expires_at, 'c', fmt(s.count), 's', fmt(s.start))
end
