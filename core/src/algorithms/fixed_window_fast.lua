-- fixed_window, one policy under the server clock (the layout: fixed_window.lua). First in the script, before
-- prelude.lua: a Redis script's body runs afresh on every call, so this path creates no function and no table.
-- GET, then PTTL for a live window, then SET PX (opening) or INCRBY (allowed hit); no clock read.
-- Replies with one integer (commands.cpp, to_decision): x = left_ms * (limit + 1) + remaining, as is for an
-- allowed call and as -1 - x for a denial; the 4-integer reply where x would not be exact (x >= 2^53, or a foreign
-- count). Periods are whole milliseconds (policy.cpp), so left is too.
if ARGV[2] ~= 'f' and #KEYS == 1 and #ARGV == 6 and ARGV[3] == '' then
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

-- Several policies under the server clock: the same reads, every count written only when all policies allow a hit
-- (decide_all.lua's rules), the policy reported chosen by fragments/combine_decisions.lua. Arrays of numbers only, no
-- function. Replies with one integer: x * n + index - 1, x being the one-policy reply above for the reported policy
-- with left = its retry_after for a denial (a whole period when its window is empty; commands.cpp, from_indexed),
-- and -1 - that for a denial; decide_all.lua's 7-integer reply where it would not be exact.
if ARGV[2] ~= 'f' and #KEYS > 1 and #ARGV == 3 + 3 * #KEYS and ARGV[3] == '' and tonumber(ARGV[1]) then
  local n, cost = #KEYS, tonumber(ARGV[1])
  local counts, lefts, all_allowed = {}, {}, true
  for i = 1, n do
    local key = KEYS[i]
    local count, left = tonumber(redis.call('GET', key)) or 0, 0
    if count > 0 then
      left = redis.call('PTTL', key)
      if left < 0 then count, left = 0, 0 else left = left + 1 end
    end
    if count + cost > tonumber(ARGV[3 * i + 1]) then all_allowed = false end
    counts[i], lefts[i] = count, left
  end
  local hit = all_allowed and ARGV[2] == '1'
  local index, best_retry, best_remaining
  for i = 1, n do
    local limit, count, left = tonumber(ARGV[3 * i + 1]), counts[i], lefts[i]
    if count <= 0 then count, left = 0, math.max(1, tonumber(ARGV[3 * i + 2]) / 1000 - 1) + 1 end  -- opening now
    local retry_after = count + cost > limit and left or 0
    if hit then
      if count == 0 then
        redis.call('SET', KEYS[i], ARGV[1], 'PX', string.format('%d', left - 1))
        count = cost
      else
        count = redis.call('INCRBY', KEYS[i], ARGV[1])
      end
      counts[i], lefts[i] = count, left
    end
    local allowed, remaining = retry_after == 0, limit - count
    --@fragment combine_decisions@
  end
  local limit, count, remaining = tonumber(ARGV[3 * index + 1]), counts[index], best_remaining
  local x = ((all_allowed and lefts[index] or best_retry) * (limit + 1) + remaining) * n + index - 1
  if count == limit - remaining and remaining >= 0 and x < 9007199254740992 then return all_allowed and x or -1 - x end
  return {all_allowed and 1 or 0, limit, remaining, count > 0 and lefts[index] * 1000 or 0, best_retry * 1000, count,
          index - 1}
end
