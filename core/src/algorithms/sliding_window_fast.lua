-- sliding_window (the layout and the arithmetic: sliding_window.lua). First in the script, before prelude.lua: a
-- Redis script's body runs afresh on every call, so these paths create no function; they read the 4-number head of
-- each state and build a table of its buckets only when the head alone does not decide (the window moved past the
-- newest stored bucket, or a denial's retry_after). TIME (or the test clock), GET, then for an allowed hit SETRANGE
-- of the head's total and newest count (the TTL set when that bucket opened still covers the state), or SET PX of the
-- whole state when a hit opens a new bucket. Offsets go to Redis as strings ('8'): a number argument costs a
-- conversion through printf on every call.

-- One policy, with no table on its common call (an absent key, or a hit in the newest stored bucket). Replies with
-- one integer for an allowed call (commands.cpp, to_decision): x = reset_after * (limit + 1) + remaining, where
-- x < 2^53; else, and for a denial, decide_all.lua's reply for one policy {allowed, remaining, reset_after,
-- retry_after[, used]}.
if ARGV[2] ~= 'f' and #KEYS == 1 and #ARGV == 6 then
  local cost, limit, period, n = tonumber(ARGV[1]), tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
  local now, grace_ms = tonumber(ARGV[3]), 1000  -- a test clock's time stands still: prelude.lua, ttl_grace_ms
  if ARGV[3] == '' then
    local t = redis.call('TIME')
    now, grace_ms = t[1] * 1000000 + t[2], 0  -- strings coerced as tonumber would, without its call
  end
  if cost and limit and period and n and now then
    local key = KEYS[1]
    -- q - q % 1 is math.floor(q), exactly, without a function call (four of them on this path)
    local w = period / n
    w = w - w % 1
    local v = redis.call('GET', key)
    local size = v and #v or 0
    local b, full, cur, old = nil, 0, 0, 0  -- the head: newest stored bucket, its window's total, its count, b - n's
    if size >= 32 and size % 8 == 0 then b, full, cur, old = struct.unpack('<dddd', v) end
    if b and b * w > now then now = b * w end  -- a clock that went back: not before the state
    local c = now / w
    c = c - c % 1
    local e = now - c * w
    local weight = e * 1000 / w
    weight = 1000 - (weight - weight % 1)  -- ceil((w - e) * 1000 / w), with no value above w * 1000
    local estimate = (old * weight + 999) / 1000
    estimate = full + (estimate - estimate % 1)
    -- counts[k] (when > 0) for the buckets c - n .. c, from every stored bucket.
    local counts
    if b and (b ~= c or cur <= 0 or estimate + cost > limit) then
      counts = {}
      for k = math.max(b - n, c - n), b do
        local x = 0
        if k == b then x = cur elseif k == b - n then x = old elseif 32 + (b - k) * 8 <= size then
          x = struct.unpack('<d', v, 25 + (b - k) * 8)
        end
        if x > 0 then counts[k] = x end
      end
      full = 0
      for k = c - n + 1, c do full = full + (counts[k] or 0) end
      old, cur = counts[c - n] or 0, counts[c] or 0
      estimate = full + math.floor((old * weight + 999) / 1000)
    end
    local allowed = estimate + cost <= limit
    local newest_counted = cur > 0 and c or nil
    local retry_after = 0
    if allowed and ARGV[2] == '1' then
      estimate, newest_counted = estimate + cost, c
      if b and not counts then
        redis.call('SETRANGE', key, '8', struct.pack('<dd', full + cost, cur + cost))
        if grace_ms > 0 then  -- a test clock's state has its TTL from a time that stands still: renewed
          redis.call('PEXPIRE', key, string.format('%d', math.floor(((c + n + 1) * w - now + 999) / 1000) + grace_ms))
        end
      else
        -- A new bucket opens: the head, then buckets c - 1 .. c - n + 1, the zeros at the end left out.
        local value, last = struct.pack('<dddd', c, full + cost, cur + cost, old), 0
        for k = c - 1, c - n + 1, -1 do
          if counts and counts[k] then last = c - k end
        end
        if last > 0 then
          local parts = {value}
          for j = 1, last do parts[j + 1] = struct.pack('<d', counts[c - j] or 0) end
          value = table.concat(parts)
        end
        redis.call('SET', key, value, 'PX',
                   string.format('%d', math.floor(((c + n + 1) * w - now + 999) / 1000) + grace_ms))
      end
    elseif not allowed then
      counts = counts or {}  -- an absent key: only a cost above the limit is denied
      -- The first instant the estimate leaves room for cost (sliding_window.lua, evaluate).
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
    if counts and not newest_counted then
      for k = c - 1, c - n, -1 do
        if newest_counted == nil and counts[k] then newest_counted = k end
      end
    end
    local reset_after = newest_counted and (newest_counted + n + 1) * w - now or 0
    local remaining = limit - estimate
    if remaining < 0 then remaining = 0 end
    if allowed then
      local x = reset_after * (limit + 1) + remaining
      if x < 9007199254740992 then return x end
    end
    if estimate == limit - remaining then return {allowed and 1 or 0, remaining, reset_after, retry_after} end
    return {allowed and 1 or 0, remaining, reset_after, retry_after, estimate}
  end
end

-- Several policies: the same reads and arithmetic per policy (one table each), every state written only when all
-- policies allow a hit (decide_all.lua's rules), and decide_all.lua's 7-integer reply, the policy reported chosen by
-- fragments/combine_decisions.lua.
if ARGV[2] ~= 'f' and #KEYS > 1 and #ARGV == 3 + 3 * #KEYS and tonumber(ARGV[1]) and (ARGV[3] == '' or tonumber(ARGV[3])) then
  local cost, clock_now, grace_ms = tonumber(ARGV[1]), tonumber(ARGV[3]), 1000
  if ARGV[3] == '' then
    local t = redis.call('TIME')
    clock_now, grace_ms = tonumber(t[1]) * 1000000 + tonumber(t[2]), 0
  end
  local states, all_allowed = {}, true
  for i = 1, #KEYS do
    local limit, n = tonumber(ARGV[3 * i + 1]), tonumber(ARGV[3 * i + 3])
    local w = math.floor(tonumber(ARGV[3 * i + 2]) / n)
    local v = redis.call('GET', KEYS[i])
    local size = v and #v or 0
    local now, b, full, cur, old = clock_now, nil, 0, 0, 0
    if size >= 32 and size % 8 == 0 then b, full, cur, old = struct.unpack('<dddd', v) end
    if b and b * w > now then now = b * w end
    local c = math.floor(now / w)
    local weight = 1000 - math.floor((now - c * w) * 1000 / w)
    local estimate = full + math.floor((old * weight + 999) / 1000)
    local counts
    if b and (b ~= c or cur <= 0 or estimate + cost > limit) then
      counts = {}
      for k = math.max(b - n, c - n), b do
        local x = 0
        if k == b then x = cur elseif k == b - n then x = old elseif 32 + (b - k) * 8 <= size then
          x = struct.unpack('<d', v, 25 + (b - k) * 8)
        end
        if x > 0 then counts[k] = x end
      end
      full = 0
      for k = c - n + 1, c do full = full + (counts[k] or 0) end
      old, cur = counts[c - n] or 0, counts[c] or 0
      estimate = full + math.floor((old * weight + 999) / 1000)
    end
    local allowed = estimate + cost <= limit
    all_allowed = all_allowed and allowed
    states[i] = {limit = limit, n = n, w = w, now = now, b = b, c = c, full = full, cur = cur, old = old,
                 estimate = estimate, allowed = allowed, counts = counts}
  end
  local hit = all_allowed and ARGV[2] == '1'
  local index, best_retry, best_remaining, reset
  for i = 1, #KEYS do
    local s = states[i]
    local limit, n, w, now, c, counts = s.limit, s.n, s.w, s.now, s.c, s.counts
    local newest_counted = s.cur > 0 and c or nil
    local retry_after = 0
    if hit then
      s.estimate, newest_counted = s.estimate + cost, c
      if s.b and not counts then
        redis.call('SETRANGE', KEYS[i], '8', struct.pack('<dd', s.full + cost, s.cur + cost))
        if grace_ms > 0 then
          redis.call('PEXPIRE', KEYS[i],
                     string.format('%d', math.floor(((c + n + 1) * w - now + 999) / 1000) + grace_ms))
        end
      else
        local value, last = struct.pack('<dddd', c, s.full + cost, s.cur + cost, s.old), 0
        for k = c - 1, c - n + 1, -1 do
          if counts and counts[k] then last = c - k end
        end
        if last > 0 then
          local parts = {value}
          for j = 1, last do parts[j + 1] = struct.pack('<d', counts[c - j] or 0) end
          value = table.concat(parts)
        end
        redis.call('SET', KEYS[i], value, 'PX',
                   string.format('%d', math.floor(((c + n + 1) * w - now + 999) / 1000) + grace_ms))
      end
    elseif not s.allowed then
      counts = counts or {}
      local full2 = s.full
      for cc = c, c + n + 1 do
        if cc > c then full2 = full2 + (counts[cc] or 0) - (counts[cc - n] or 0) end
        local old2 = counts[cc - n] or 0
        local room = limit - cost - full2
        if room >= 0 then
          local offset = 0
          if old2 > 0 then
            local q = math.floor(room * 1000 / old2)
            offset = q >= 1000 and 0 or w - math.floor(q * w / 1000)
          end
          if offset < w then
            retry_after = math.max(cc * w + offset, now) - now
            break
          end
        end
      end
    end
    if counts and not newest_counted then
      for k = c - 1, c - n, -1 do
        if newest_counted == nil and counts[k] then newest_counted = k end
      end
    end
    local allowed, remaining = s.allowed, limit - s.estimate
    if remaining < 0 then remaining = 0 end
    --@fragment combine_decisions@
    if index == i then reset = newest_counted and (newest_counted + n + 1) * w - now or 0 end
  end
  local s = states[index]
  return {all_allowed and 1 or 0, s.limit, best_remaining, reset, best_retry, s.estimate, index - 1}
end
