-- gcra, one policy (the layout: gcra.lua). First in the script, before prelude.lua: a Redis script's body runs
-- afresh on every call, so this path creates no function and no table. TIME (or the test clock), GET, and SET PX
-- only for an allowed hit. Replies with one integer (commands.cpp, to_decision): reset_after = tat - now, as is for
-- an allowed call and as -1 - reset_after for a denial; remaining and retry_after follow from it and the policy.
if #KEYS == 1 and #ARGV == 6 then
  local cost, limit, period, burst = tonumber(ARGV[1]), tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
  local now, grace_ms = tonumber(ARGV[3]), 1000  -- a test clock's time stands still: prelude.lua, ttl_grace_ms
  if ARGV[3] == '' then
    local t = redis.call('TIME')
    now, grace_ms = tonumber(t[1]) * 1000000 + tonumber(t[2]), 0
  end
  if cost and limit and period and burst and now then
    local t = math.floor((period + limit - 1) / limit)  -- µs per token, rounded up
    local tat = tonumber(redis.call('GET', KEYS[1])) or now
    if tat < now then tat = now end
    local next_tat = tat + cost * t
    if next_tat - now > burst * t then return -1 - (tat - now) end
    if ARGV[2] == '1' then
      redis.call('SET', KEYS[1], string.format('%d', next_tat), 'PX',
                 string.format('%d', math.floor((next_tat - now + 999) / 1000) + grace_ms))
      tat = next_tat
    end
    return tat - now
  end
end
