-- gcra, one policy (the layout: gcra.lua), and token_bucket's too: its stored full-at instant is this TAT, the same
-- number with the same arithmetic (token_bucket.lua; the fast column of algorithm_table.hpp puts this file before both
-- scripts). First in the script, before prelude.lua: a Redis script's body runs afresh on every call, so this path
-- creates no function and no table. TIME (or the test clock), GET, and SET PX only for an allowed hit. Replies with one
-- integer (commands.cpp, to_decision): reset_after = tat - now, as is for an allowed call and as -1 - reset_after for a
-- denial; the rest of the decision follows from it, the policy and the cost.
if ARGV[2] ~= 'f' and #KEYS == 1 and #ARGV == 6 then
  local cost, limit, period, burst = tonumber(ARGV[1]), tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
  local now, grace_ms = tonumber(ARGV[3]), 1000  -- a test clock's time stands still: prelude.lua, ttl_grace_ms
  if ARGV[3] == '' then
    local t = redis.call('TIME')
    now, grace_ms = tonumber(t[1]) * 1000000 + tonumber(t[2]), 0
  end
  if cost and limit and period and burst and now then
    local t = math.floor((period + limit - 1) / limit)  -- µs per token, rounded up
    local stored = tonumber(redis.call('GET', KEYS[1]))
    local tat = stored or now
    if tat < now then tat = now end
    local next_tat = tat + cost * t
    local op = string.sub(ARGV[2], 1, 1)
    if op == 'c' then
      -- cancel (decide_all.cpp, cancel_one): the cost back when the state is still what the reservation left (its
      -- ticket). Replies {1 given / 0 not, tat - now}.
      if stored == nil or stored ~= tonumber(string.sub(ARGV[2], 2)) or stored <= now then return {0, tat - now} end
      local back = stored - cost * t
      if back <= now then
        redis.call('DEL', KEYS[1])
        return {1, 0}
      end
      redis.call('SET', KEYS[1], string.format('%d', back), 'PX',
                 string.format('%d', math.floor((back - now + 999) / 1000) + grace_ms))
      return {1, back - now}
    end
    if op == 'r' then
      -- reserve (decide_all.cpp, reserve_all): the hit is charged at now + wait, wait = how far the TAT lies beyond
      -- the burst; the TAT then always grows by cost * t. Replies {tat - now, tat}: the decision (to_decision) and
      -- the ticket; a wait beyond the caller's max_wait is a hit's denial.
      if next_tat - now - burst * t > tonumber(string.sub(ARGV[2], 2)) then return -1 - (tat - now) end
      redis.call('SET', KEYS[1], string.format('%d', next_tat), 'PX',
                 string.format('%d', math.floor((next_tat - now + 999) / 1000) + grace_ms))
      return {next_tat - now, next_tat}
    end
    if next_tat - now > burst * t then return -1 - (tat - now) end
    if ARGV[2] == '1' then
      redis.call('SET', KEYS[1], string.format('%d', next_tat), 'PX',
                 string.format('%d', math.floor((next_tat - now + 999) / 1000) + grace_ms))
      tat = next_tat
    end
    return tat - now
  end
end

-- Several policies: each state read once, every state written only when all policies allow a hit (decide_all.lua's
-- rules), the policy reported chosen by fragments/combine_decisions.lua. Arrays of numbers only, no function. A hit
-- or peek replies with one integer: reset_after * n + index - 1 for the reported policy (commands.cpp, from_indexed),
-- -1 - that for a denial; decide_all.lua's 7-integer reply where it would not be exact; a reservation with 8.
if ARGV[2] ~= 'f' and #KEYS > 1 and #ARGV == 3 + 3 * #KEYS and tonumber(ARGV[1]) and (ARGV[3] == '' or tonumber(ARGV[3])) then
  local n, cost = #KEYS, tonumber(ARGV[1])
  local now, grace_ms = tonumber(ARGV[3]), 1000
  if ARGV[3] == '' then
    local t = redis.call('TIME')
    now, grace_ms = tonumber(t[1]) * 1000000 + tonumber(t[2]), 0
  end
  local tats, all_allowed = {}, true
  for i = 1, n do
    local limit = tonumber(ARGV[3 * i + 1])
    local t = math.floor((tonumber(ARGV[3 * i + 2]) + limit - 1) / limit)
    local tat = tonumber(redis.call('GET', KEYS[i])) or now
    if tat < now then tat = now end
    if tat + cost * t - now > tonumber(ARGV[3 * i + 3]) * t then all_allowed = false end
    tats[i] = tat
  end
  if string.sub(ARGV[2], 1, 1) == 'r' then
    -- reserve (decide_all.cpp, reserve_all): every policy charged at now + wait, the largest wait of any; the
    -- reply is the 7 integers of an allowed hit at that instant (durations from now) and the wait. A wait beyond
    -- max_wait is a hit's denial (below: some policy denies now, so `all_allowed` is false).
    local wait = 0
    for i = 1, n do
      local limit = tonumber(ARGV[3 * i + 1])
      local t = math.floor((tonumber(ARGV[3 * i + 2]) + limit - 1) / limit)
      wait = math.max(wait, tats[i] + cost * t - now - tonumber(ARGV[3 * i + 3]) * t)
    end
    if wait <= tonumber(string.sub(ARGV[2], 2)) then
      local at, index, best_retry, best_remaining, reset = now + wait
      local all_allowed = true  -- at `at`, every policy allows the hit
      for i = 1, n do
        local limit, burst = tonumber(ARGV[3 * i + 1]), tonumber(ARGV[3 * i + 3])
        local t = math.floor((tonumber(ARGV[3 * i + 2]) + limit - 1) / limit)
        local next_tat = math.max(tats[i], at) + cost * t
        redis.call('SET', KEYS[i], string.format('%d', next_tat), 'PX',
                   string.format('%d', math.floor((next_tat - now + 999) / 1000) + grace_ms))
        local allowed, retry_after = true, 0
        local remaining = math.floor((burst * t - (next_tat - at)) / t)  -- >= 0: the hit is allowed at `at`
        --@fragment combine_decisions@
        if index == i then reset = next_tat - now end
      end
      local burst = tonumber(ARGV[3 * index + 3])
      return {1, burst, best_remaining, reset, 0, burst - best_remaining, index - 1, wait}
    end
  end
  local hit = all_allowed and ARGV[2] == '1'
  local index, best_retry, best_remaining, reset
  for i = 1, n do
    local limit, burst, tat = tonumber(ARGV[3 * i + 1]), tonumber(ARGV[3 * i + 3]), tats[i]
    local t = math.floor((tonumber(ARGV[3 * i + 2]) + limit - 1) / limit)
    local tau, next_tat = burst * t, tat + cost * t
    local retry_after = next_tat - now > tau and next_tat - now - tau or 0
    if hit then
      redis.call('SET', KEYS[i], string.format('%d', next_tat), 'PX',
                 string.format('%d', math.floor((next_tat - now + 999) / 1000) + grace_ms))
      tat = next_tat
    end
    local a = tau - (tat - now)
    local allowed = retry_after == 0
    local remaining = a >= 0 and math.floor(a / t) or 0  -- C++ division; none left past the burst (reservations)
    --@fragment combine_decisions@
    if index == i then reset = tat - now end
  end
  local x = reset * n + index - 1
  if x < 9007199254740992 then return all_allowed and x or -1 - x end
  local burst = tonumber(ARGV[3 * index + 3])
  return {all_allowed and 1 or 0, burst, best_remaining, reset, best_retry, burst - best_remaining, index - 1}
end
