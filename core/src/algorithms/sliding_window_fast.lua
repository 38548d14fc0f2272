-- sliding_window, one policy (the layout and the arithmetic: sliding_window.lua). First in the script, before
-- prelude.lua: a Redis script's body runs afresh on every call, so this path creates no function; it walks HGETALL's
-- reply in place and builds a table of the buckets only for a denial's retry_after. TIME (or the test clock),
-- HGETALL, and for an allowed hit HDEL of dropped buckets, HSET and PEXPIRE. The reply of decide_all.lua for one
-- policy: {allowed, remaining, reset_after, retry_after, used}.
if #KEYS == 1 and #ARGV == 6 then
  local cost, limit, period, n = tonumber(ARGV[1]), tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
  local now, grace_ms = tonumber(ARGV[3]), 1000  -- a test clock's time stands still: prelude.lua, ttl_grace_ms
  if ARGV[3] == '' then
    local t = redis.call('TIME')
    now, grace_ms = tonumber(t[1]) * 1000000 + tonumber(t[2]), 0
  end
  if cost and limit and period and n and now then
    local key = KEYS[1]
    local w = math.floor(period / n)
    local kv = redis.call('HGETALL', key)
    local newest
    for i = 1, #kv, 2 do
      local k = tonumber(kv[i])
      if newest == nil or k > newest then newest = k end
    end
    if newest and newest * w > now then now = newest * w end  -- a clock that went back: not before the state
    local c = math.floor(now / w)
    local e = now - c * w
    -- The buckets c - n .. c count; older fields are stale (deleted by a save).
    local full, old, current, newest_counted = 0, 0, 0, nil
    for i = 1, #kv, 2 do
      local k, v = tonumber(kv[i]), tonumber(kv[i + 1]) or 0
      if k >= c - n and k <= c then
        if k > c - n then full = full + v else old = v end
        if k == c then current = v end
        if v > 0 and (newest_counted == nil or k > newest_counted) then newest_counted = k end
      end
    end
    local weight = 1000 - math.floor(e * 1000 / w)  -- ceil((w - e) * 1000 / w), with no value above w * 1000
    local estimate = full + math.floor((old * weight + 999) / 1000)
    local allowed = estimate + cost <= limit
    local retry_after = 0
    if allowed and ARGV[2] == '1' then
      estimate = estimate + cost
      newest_counted = c
      local ttl = string.format('%d', math.floor(((c + n + 1) * w - now + 999) / 1000) + grace_ms)
      for i = 1, #kv, 2 do
        if tonumber(kv[i]) < c - n then redis.call('HDEL', key, kv[i]) end
      end
      redis.call('HSET', key, string.format('%d', c), string.format('%d', current + cost))
      redis.call('PEXPIRE', key, ttl)
    elseif not allowed then
      -- The first instant the estimate leaves room for cost (sliding_window.lua, evaluate).
      local counts = {}
      for i = 1, #kv, 2 do
        local k = tonumber(kv[i])
        if k >= c - n and k <= c then counts[k] = tonumber(kv[i + 1]) end
      end
      local full2 = full
      for cc = c, c + n + 1 do
        if cc > c then full2 = full2 + (counts[cc] or 0) - (counts[cc - n] or 0) end
        local old2 = counts[cc - n] or 0
        local r = limit - cost - full2
        if r >= 0 then
          local offset = 0
          if old2 > 0 then
            local q = math.floor(r * 1000 / old2)
            offset = q >= 1000 and 0 or w - math.floor(q * w / 1000)
          end
          if offset < w then
            retry_after = math.max(cc * w + offset, now) - now
            break
          end
        end
      end
    end
    local reset_after = newest_counted and (newest_counted + n + 1) * w - now or 0
    local remaining = limit - estimate
    if remaining < 0 then remaining = 0 end
    if estimate == limit - remaining then return {allowed and 1 or 0, remaining, reset_after, retry_after} end
    return {allowed and 1 or 0, remaining, reset_after, retry_after, estimate}
  end
end
