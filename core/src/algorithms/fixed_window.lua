-- fixed_window (core/src/algorithms/fixed_window.cpp).
-- Redis layout, server clock: a STRING holding the count, whose TTL is the window, as INCRBY + PEXPIRE on the first
-- hit: the hit that opens a window sets the count with PX = period - 1 ms, so the key lives through the
-- millisecond ticks start .. start + period - 1 and is gone at start + period. No clock read: the time left in the
-- window is the key's PTTL + 1 ms. Under a test clock (ARGV[3] given), whose time does not run with the server's,
-- the window start is kept instead: a HASH with c = the count, s = the window start in µs.
-- The state is {count, left = µs left in the window, fresh = a window this call opens}.

needs_clock = false

-- The PX of a window's key and the µs it lasts from the opening hit's millisecond: ticks 0 .. px are alive.
local function window_px(period)
  return math.max(1, period / 1000 - 1)
end

-- A live counter's count and µs left, from GET and PTTL; a key without a TTL (not ours) counts as absent.
local function read_counter(key)
  local count = tonumber(redis.call('GET', key))
  if not count then return 0, 0 end
  local ms = redis.call('PTTL', key)
  if ms < 0 then return 0, 0 end
  return count, (ms + 1) * 1000
end

local function load_state(key, p, now)
  if test_now then
    local v = redis.call('HMGET', key, 'c', 's')
    local count = tonumber(v[1]) or 0
    return {count = count, left = count > 0 and tonumber(v[2]) + p.period - now or 0}
  end
  local count, left = read_counter(key)
  return {count = count, left = left}
end

local function evaluate(s, now, p, cost, hit)
  -- An empty or expired window restarts now.
  if s.count <= 0 or s.left <= 0 then
    s.count, s.fresh = 0, true
    s.left = test_now and p.period or (window_px(p.period) + 1) * 1000
  end
  if refunding then
    s.taken = math.min(s.count, cost)
    s.count = s.count - s.taken
  end
  local allowed = s.count + cost <= p.limit
  if allowed and hit then s.count = s.count + cost end
  local reset_after = s.count > 0 and s.left or 0
  return {allowed, p.limit, p.limit - s.count, reset_after, allowed and 0 or s.left, s.count}, s.left
end

-- Called after an allowed hit, and after a refund.
local function save_state(key, s, p, now, expires_at)
  if refunding then
    if s.taken == 0 then return end  -- an empty window: nothing was given back
    if s.count == 0 then return redis.call('DEL', key) end
    if test_now then return redis.call('HSET', key, 'c', fmt(s.count)) end
    return redis.call('DECRBY', key, fmt(s.taken))  -- the TTL, the window, stays
  end
  if test_now then
    return save_fields(key, now, now + s.left, 'c', fmt(s.count), 's', fmt(now + s.left - p.period))
  end
  if s.fresh then return redis.call('SET', key, fmt(s.count), 'PX', fmt(window_px(p.period))) end
  redis.call('INCRBY', key, ARGV[1])
end

