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
    local key, hit = KEYS[1], ARGV[2] == '1'
    local w = period / n
    w = w - w % 1
    --@fragment sliding_window_read@
    local allowed = estimate + cost <= limit
    --@fragment sliding_window_decide@
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
    local key, limit, n, now = KEYS[i], tonumber(ARGV[3 * i + 1]), tonumber(ARGV[3 * i + 3]), clock_now
    local w = math.floor(tonumber(ARGV[3 * i + 2]) / n)
    --@fragment sliding_window_read@
    local allowed = estimate + cost <= limit
    all_allowed = all_allowed and allowed
    states[i] = {limit = limit, n = n, w = w, now = now, b = b, c = c, full = full, cur = cur, old = old,
                 estimate = estimate, allowed = allowed, counts = counts}
  end
  local hit = all_allowed and ARGV[2] == '1'
  local index, best_retry, best_remaining, reset, used
  for i = 1, #KEYS do
    local s, key = states[i], KEYS[i]
    local limit, n, w, now, b, c, full, cur, old = s.limit, s.n, s.w, s.now, s.b, s.c, s.full, s.cur, s.old
    local estimate, allowed, counts = s.estimate, s.allowed, s.counts
    --@fragment sliding_window_decide@
    --@fragment combine_decisions@
    if index == i then reset, used = reset_after, estimate end
  end
  return {all_allowed and 1 or 0, states[index].limit, best_remaining, reset, best_retry, used, index - 1}
end
