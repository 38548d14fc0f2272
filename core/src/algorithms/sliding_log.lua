-- sliding_log (core/src/algorithms/sliding_log.cpp).
-- Redis layout: a ZSET of the allowed hits, score = the hit's time in µs, member = "<time_us>:<cost>"; hits at the
-- same instant are one member with the summed cost. A saved hit first removes the members with
-- score <= now - period, so a key holds at most `limit` members (each costs at least 1).

-- Reads only the live members, (now - period, +inf], oldest first: the cost of a call grows with the limit, not
-- with what expired.
local function load_state(key, p, now)
  local entries = {}
  for i, m in ipairs(redis.call('ZRANGEBYSCORE', key, '(' .. fmt(now - p.period), '+inf')) do
    local t, c = string.match(m, '^(-?%d+):(%d+)$')
    entries[i] = {t = tonumber(t), cost = tonumber(c)}
  end
  return {entries = entries, head = 1}  -- entries before head have expired
end

local function evaluate(s, now, p, cost, hit)
  local e = s.entries
  while s.head <= #e and e[s.head].t <= now - p.period do s.head = s.head + 1 end
  local sum = 0
  for i = s.head, #e do sum = sum + e[i].cost end

  local allowed = sum + cost <= p.limit
  if allowed and hit then
    if s.head <= #e and e[#e].t == now then
      e[#e].cost = e[#e].cost + cost  -- same instant: one entry
    else
      e[#e + 1] = {t = now, cost = cost}
    end
    sum = sum + cost
  end
  local retry_after = 0
  if not allowed then
    -- The first entry whose expiry frees enough of the quota.
    local freed = 0
    for i = s.head, #e do
      freed = freed + e[i].cost
      if sum - freed + cost <= p.limit then
        retry_after = e[i].t + p.period - now
        break
      end
    end
  end
  local reset_after = s.head <= #e and e[#e].t + p.period - now or 0
  return {allowed, p.limit, p.limit - sum, reset_after, retry_after, sum}, now + reset_after
end

-- Called after an allowed hit: only the member at `now` changed. It is rewritten with the cost of every live
-- entry at that instant, so an earlier member at the same score is merged rather than lost.
local function save_state(key, s, p, now, expires_at)
  local ttl = ttl_ms(now, expires_at)
  if not ttl then return redis.call('DEL', key) end
  local total = 0
  for i = s.head, #s.entries do
    if s.entries[i].t == now then total = total + s.entries[i].cost end
  end
  local t = fmt(now)
  redis.call('ZREMRANGEBYSCORE', key, '-inf', fmt(now - p.period))
  redis.call('ZREMRANGEBYSCORE', key, t, t)
  redis.call('ZADD', key, t, t .. ':' .. fmt(total))
  redis.call('PEXPIRE', key, ttl)
end
