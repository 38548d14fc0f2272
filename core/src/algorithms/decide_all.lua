-- The main body: decide for every policy of the key at once, the twin of decide_all.cpp.
-- A decision is {allowed, limit, remaining, reset_after, retry_after, used}.

-- Peek every policy; only if the call is a hit that all of them allow, charge and save each one.
local states, decisions = {}, {}
local all_allowed = true
for i = 1, n do
  states[i] = load_state(KEYS[i], policies[i])
  decisions[i] = evaluate(states[i], now, policies[i], cost, false)
  all_allowed = all_allowed and decisions[i][1]
end
if hit and all_allowed then
  for i = 1, n do
    local d, expires_at = evaluate(states[i], now, policies[i], cost, true)
    decisions[i] = d
    save_state(KEYS[i], states[i], policies[i], now, expires_at)
  end
end

-- combine_decisions: among the policies that agree with the outcome, the largest retry_after, then the lowest
-- remaining, then the first (so allowed reports the lowest remaining; denied, the policy holding back longest).
local chosen, index
for i = 1, n do
  local d = decisions[i]
  if d[1] == all_allowed and (chosen == nil or d[5] > chosen[5] or (d[5] == chosen[5] and d[3] < chosen[3])) then
    chosen, index = d, i
  end
end
return {chosen[1] and 1 or 0, chosen[2], chosen[3], chosen[4], chosen[5], chosen[6], index - 1}
