-- sliding_window_fast.lua's decision on one policy read by fragments/sliding_window_read.lua: for an allowed hit
-- (`hit`: the call is a hit that every policy allows) the charge, written as SETRANGE of the head's total and newest
-- count when the hit falls in the newest stored bucket (the TTL set when that bucket opened still covers the state),
-- else as SET PX of the whole state; for a denial, retry_after (fragments/sliding_window_retry.lua). Spliced as text
-- by cmake/embed_lua.cmake into both fast paths, after the read, with key, hit, allowed, cost, limit, n, w, now and
-- grace_ms; updates estimate and counts, declares newest_counted, retry_after, reset_after and remaining. The general
-- path's twin: evaluate and save_state in sliding_window.lua; tests/conformance/vectors.json and
-- tests/core/differential_test.cpp bind them.
local newest_counted = cur > 0 and c or nil
local retry_after = 0
if allowed and hit then
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
  --@fragment sliding_window_retry@
end
if counts and not newest_counted then
  for k = c - 1, c - n, -1 do
    if newest_counted == nil and counts[k] then newest_counted = k end
  end
end
local reset_after = newest_counted and (newest_counted + n + 1) * w - now or 0
local remaining = limit - estimate
if remaining < 0 then remaining = 0 end
