-- token_bucket, one policy (the layout: token_bucket.lua). First in the script, before prelude.lua: a Redis
-- script's body runs afresh on every call, so this path creates no function and no table. TIME (or the test
-- clock), GET, and SET PX only for an allowed hit. Replies with one integer (commands.cpp, to_decision): reset_after
-- = cap - credit, as is for an allowed call and as -1 - reset_after for a denial; remaining and retry_after follow
-- from it and the policy (gcra's reply, with tau = cap).
if #KEYS == 1 and #ARGV == 6 then
  local cost, limit, period, burst = tonumber(ARGV[1]), tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
  local now, grace_ms = tonumber(ARGV[3]), 1000  -- a test clock's time stands still: prelude.lua, ttl_grace_ms
  if ARGV[3] == '' then
    local t = redis.call('TIME')
    now, grace_ms = tonumber(t[1]) * 1000000 + tonumber(t[2]), 0
  end
  if cost and limit and period and burst and now then
    local t = math.floor((period + limit - 1) / limit)  -- µs per token, rounded up
    local empty = (tonumber(redis.call('GET', KEYS[1])) or 0) - now  -- cap - credit; absent: a full bucket
    if empty < 0 then empty = 0 end
    local need = cost * t
    if burst * t - empty < need then return -1 - empty end
    if ARGV[2] == '1' then
      empty = empty + need
      redis.call('SET', KEYS[1], string.format('%d', now + empty), 'PX',
                 string.format('%d', math.floor((empty + 999) / 1000) + grace_ms))
    end
    return empty
  end
end
