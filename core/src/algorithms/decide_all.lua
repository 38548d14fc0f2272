-- The main body: decide for every policy of the key at once, the twin of decide_all.cpp.
-- evaluate returns a decision {allowed, limit, remaining, reset_after, retry_after, used} and the state's expiry.

-- One policy (the calls <algorithm>_fast.lua did not take): one evaluation, a save only for an allowed hit, the
-- short reply.
if n == 1 then
  local p = {limit = tonumber(ARGV[4]), period = tonumber(ARGV[5]), extra = tonumber(ARGV[6])}
  local now = needs_clock and clock() or test_now
  local s = load_state(KEYS[1], p, now)
  local d, expires_at = evaluate(s, now, p, cost, hit)
  if (hit and d[1]) or refunding then save_state(KEYS[1], s, p, now, expires_at) end
  if d[6] == d[2] - d[3] then return {d[1] and 1 or 0, d[3], d[4], d[5]} end
  return {d[1] and 1 or 0, d[3], d[4], d[5], d[6]}
end

-- Several policies, one pass: each is evaluated once in the call's mode. A denied hit changes nothing and decides
-- as a peek would, so when any policy denies, the denying policies' decisions are the ones reported and nothing is
-- saved; when all allow a hit, every state is saved with its charge.
local now = needs_clock and clock() or test_now
local states, policies, decisions, expiries = {}, {}, {}, {}
local all_allowed = true
for i = 1, n do
  local j = 3 * i
  local p = {limit = tonumber(ARGV[j + 1]), period = tonumber(ARGV[j + 2]), extra = tonumber(ARGV[j + 3])}
  local s = load_state(KEYS[i], p, now)
  local d, expires_at = evaluate(s, now, p, cost, hit)
  policies[i], states[i], decisions[i], expiries[i] = p, s, d, expires_at
  all_allowed = all_allowed and d[1]
end
if (hit and all_allowed) or refunding then
  for i = 1, n do save_state(KEYS[i], states[i], policies[i], now, expiries[i]) end
end

-- The policy the decision reports (fragments/combine_decisions.lua).
local index, best_retry, best_remaining
for i = 1, n do
  local d = decisions[i]
  local allowed, retry_after, remaining = d[1], d[5], d[3]
  --@fragment combine_decisions@
end
local chosen = decisions[index]
return {chosen[1] and 1 or 0, chosen[2], chosen[3], chosen[4], chosen[5], chosen[6], index - 1}
