-- fixed_window, one policy under the server clock (the layout: fixed_window.lua). First in the script, before
-- prelude.lua: a Redis script's body runs afresh on every call, so this path creates no function and no table.
-- GET, then PTTL for a live window, then SET PX (opening) or INCRBY (allowed hit); no clock read.
-- Replies with one integer (commands.cpp, to_decision): x = left_ms * (limit + 1) + remaining, as is for an
-- allowed call and as -1 - x for a denial; the 4-integer reply where x would not be exact (x >= 2^53, or a foreign
-- count). Periods are whole milliseconds (policy.cpp), so left is too.
if #KEYS == 1 and #ARGV == 6 and ARGV[3] == '' then
  local key, cost, limit = KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[4])
  if cost and limit then
    local count = tonumber(redis.call('GET', key)) or 0
    local left = 0  -- ms left in the window
    if count > 0 then
      left = redis.call('PTTL', key)
      if left < 0 then count, left = 0, 0 else left = left + 1 end  -- no TTL: not ours, counts as absent
    end
    local allowed = 1
    if count + cost > limit then
      allowed = 0
    elseif ARGV[2] == '1' then
      if count == 0 then
        local px = math.max(1, tonumber(ARGV[5]) / 1000 - 1)  -- the key lives through ticks 0 .. px
        redis.call('SET', key, ARGV[1], 'PX', string.format('%d', px))
        count, left = cost, px + 1
      else
        count = redis.call('INCRBY', key, ARGV[1])
      end
    end
    local x = left * (limit + 1) + limit - count
    if count >= 0 and x < 9007199254740992 then return allowed == 1 and x or -1 - x end
    return {allowed, limit - count, left * 1000, (1 - allowed) * left * 1000}
  end
end
