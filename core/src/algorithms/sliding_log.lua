-- sliding_log (core/src/algorithms/sliding_log.cpp).
-- Redis layout: a HASH holding the log as a queue, oldest first, with its running total beside it:
--   n = the sum of the costs of the entries in the queue, h = the index of the oldest entry, t = the index of the
--   newest, l = the time of the newest (µs); field "<i>" (decimal) = entry i as "<time_us>:<cost>". Hits at the same
--   instant are one entry. An absent key is an empty log (h = 1, t = 0).
-- A call reads the totals (HMGET), then only the entries it needs: the expired ones at the head, which it drops
-- (each entry is dropped once: amortised O(1)), and for a denial the oldest entries until enough of the quota is
-- freed. Dropping expired entries is the only write a denial or a peek can make (no TTL refresh, no count growth).

-- Entry i of s, read once: its time and cost.
local function entry(s, i)
  local t = s.times[i]
  if t == nil then
    local v = redis.call('HGET', s.key, fmt(i))
    local a, b = string.match(v, '^(-?%d+):(%d+)$')
    t = tonumber(a)
    s.times[i], s.costs[i] = t, tonumber(b)
  end
  return t, s.costs[i]
end

local function load_state(key, p, now)
  local v = redis.call('HMGET', key, 'n', 'h', 't', 'l')
  local s = {key = key, sum = tonumber(v[1]) or 0, head = tonumber(v[2]) or 1, tail = tonumber(v[3]) or 0,
             last = tonumber(v[4]), times = {}, costs = {}}
  local first = s.head
  while s.head <= s.tail do
    local t, c = entry(s, s.head)
    if t > now - p.period then break end
    s.sum = s.sum - c
    s.head = s.head + 1
  end
  if s.head > first then
    if s.head > s.tail then
      redis.call('DEL', key)
      s.sum, s.head, s.tail = 0, 1, 0
    else
      for i = first, s.head - 1, 1000 do  -- HDEL in chunks: unpack's limit
        local fields = {}
        for j = i, math.min(i + 999, s.head - 1) do fields[#fields + 1] = fmt(j) end
        redis.call('HDEL', key, unpack(fields))
      end
      redis.call('HSET', key, 'n', fmt(s.sum), 'h', fmt(s.head))
    end
  end
  return s
end

local function evaluate(s, now, p, cost, hit)
  if refunding then
    -- Take back from the newest entries; save_state deletes the fields of those emptied.
    local left = cost
    s.removed = {}
    while left > 0 and s.head <= s.tail do
      local _, c = entry(s, s.tail)
      local taken = math.min(left, c)
      s.costs[s.tail], s.sum, left = c - taken, s.sum - taken, left - taken
      if taken == c then
        s.removed[#s.removed + 1] = fmt(s.tail)
        s.tail = s.tail - 1
      end
    end
    s.taken = cost - left
    if s.head <= s.tail then s.last = entry(s, s.tail) end
  end
  local allowed = s.sum + cost <= p.limit
  if allowed and hit then
    if s.head <= s.tail and s.last == now then
      local _, c = entry(s, s.tail)
      s.costs[s.tail] = c + cost  -- same instant: one entry
    else
      s.tail = s.tail + 1
      s.times[s.tail], s.costs[s.tail], s.last = now, cost, now
    end
    s.sum = s.sum + cost
  end
  local retry_after = 0
  if not allowed then
    -- The first entry whose expiry frees enough of the quota.
    local freed = 0
    for i = s.head, s.tail do
      local t, c = entry(s, i)
      freed = freed + c
      if s.sum - freed + cost <= p.limit then
        retry_after = t + p.period - now
        break
      end
    end
  end
  local reset_after = s.head <= s.tail and s.last + p.period - now or 0
  return {allowed, p.limit, p.limit - s.sum, reset_after, retry_after, s.sum}, now + reset_after
end

-- Called after an allowed hit: only the newest entry and the totals changed. After a refund: the entries emptied
-- are deleted as well.
local function save_state(key, s, p, now, expires_at)
  local ttl = ttl_ms(now, expires_at)
  if not ttl then return redis.call('DEL', key) end
  if refunding then
    for i = 1, #s.removed, 1000 do  -- HDEL in chunks: unpack's limit
      redis.call('HDEL', key, unpack(s.removed, i, math.min(i + 999, #s.removed)))
    end
    if s.taken == 0 then return end
    now = s.last  -- the newest entry keeps its time
  end
  redis.call('HSET', key, fmt(s.tail), fmt(now) .. ':' .. fmt(s.costs[s.tail]), 'n', fmt(s.sum), 'h', fmt(s.head),
             't', fmt(s.tail), 'l', fmt(now))
  redis.call('PEXPIRE', key, ttl)
end
