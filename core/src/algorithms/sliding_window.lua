-- sliding_window (core/src/algorithms/sliding_window.cpp); p.extra is the bucket count N.
-- Redis layout: a HASH, field = the bucket index k = floor(t / w) in decimal, value = the allowed cost counted in
-- bucket k. Saving deletes the fields of dropped buckets (k < c - N).

local function load_state(key, p, now)
  local counts, newest = {}, nil
  local kv = redis.call('HGETALL', key)
  for i = 1, #kv, 2 do
    local k = tonumber(kv[i])
    counts[k] = tonumber(kv[i + 1])
    if newest == nil or k > newest then newest = k end
  end
  return {counts = counts, newest = newest}  -- newest: the newest stored bucket, nil for an absent key
end

local function evaluate(s, now, p, cost, hit)
  local n = p.extra
  local w = idiv(p.period, n)
  if s.newest then now = math.max(now, s.newest * w) end  -- a clock that went back: not before the state
  local c = idiv(now, w)
  local e = now - c * w
  s.newest, s.c = c, c
  -- The C++ ring holds buckets c - n .. c; older fields are stale until save_state deletes them.
  local function get(k)
    if k < c - n or k > c then return 0 end
    return s.counts[k] or 0
  end

  local full = 0
  for k = c - n + 1, c do full = full + get(k) end
  local old = get(c - n)
  local weight = 1000 - idiv(e * 1000, w)  -- ceil((w - e) * 1000 / w), with no value above w * 1000
  local estimate = full + idiv(old * weight + 999, 1000)

  local allowed = estimate + cost <= p.limit
  if allowed and hit then
    s.counts[c] = get(c) + cost
    estimate = estimate + cost
  end
  local retry_after = 0
  if not allowed then
    -- full2 = the sum of buckets cc - n + 1 .. cc, slid along with cc (the C++ re-sums it per bucket).
    local full2 = full
    for cc = c, c + n + 1 do
      if cc > c then full2 = full2 + get(cc) - get(cc - n) end
      local old2 = get(cc - n)
      local r = p.limit - cost - full2
      if r >= 0 then
        local offset = 0
        if old2 > 0 then
          local q = idiv(r * 1000, old2)
          offset = q >= 1000 and 0 or w - idiv(q * w, 1000)
        end
        if offset < w then
          retry_after = math.max(cc * w + offset, now) - now
          break
        end
      end
    end
  end
  local newest_counted
  for k = c, c - n, -1 do
    if get(k) > 0 then
      newest_counted = k
      break
    end
  end
  local reset_after = newest_counted and (newest_counted + n + 1) * w - now or 0
  return {allowed, p.limit, math.max(0, p.limit - estimate), reset_after, retry_after, estimate}, now + reset_after
end

-- Called after an allowed hit: only bucket c changed.
local function save_state(key, s, p, now, expires_at)
  local ttl = ttl_ms(now, expires_at)
  if not ttl then return redis.call('DEL', key) end
  for k in pairs(s.counts) do
    if k < s.c - p.extra then redis.call('HDEL', key, fmt(k)) end
  end
  redis.call('HSET', key, fmt(s.c), fmt(s.counts[s.c]))
  redis.call('PEXPIRE', key, ttl)
end
