-- sliding_window (core/src/algorithms/sliding_window.cpp); p.extra is the bucket count N.
-- Redis layout: a STRING of little-endian doubles (struct.pack '<d', exact for the integers below 2^53 it holds): the
-- head b, full, cur, old — b the newest stored bucket index floor(t / w), full the total of buckets b - N + 1 .. b,
-- cur the count of bucket b, old the count of bucket b - N — then the counts of buckets b - 1, b - 2, .. b - N + 1,
-- the zeros at the end left out. A hit in bucket b rewrites only full and cur (sliding_window_fast.lua); a hit that
-- opens a new bucket writes the whole state. An absent key, or one whose value is not such a string, is empty.

local function load_state(key, p, now)
  local counts, newest = {}, nil
  local v = redis.call('GET', key)
  local size = v and #v or 0
  if size >= 32 and size % 8 == 0 then
    local b, _, cur, old = struct.unpack('<dddd', v)
    counts[b], counts[b - p.extra], newest = cur, old, b
    for j = 1, (size - 32) / 8 do counts[b - j] = struct.unpack('<d', v, 25 + j * 8) end
  end
  return {counts = counts, newest = newest}  -- newest: the newest stored bucket, nil for an absent key
end

local function evaluate(s, now, p, cost, hit)
  local n = p.extra
  local w = idiv(p.period, n)
  if s.newest then now = math.max(now, s.newest * w) end  -- a clock that went back: not before the state
  local c = math.floor(now / w)
  local e = now - c * w
  s.newest, s.c = c, c
  -- The C++ ring holds buckets c - n .. c; older stored buckets count for nothing (save_state leaves them out).
  local function get(k)
    if k < c - n or k > c then return 0 end
    return s.counts[k] or 0
  end
  local left = refunding and cost or 0  -- a refund takes back from the newest counted buckets
  for k = c, c - n, -1 do
    if left == 0 then break end
    local taken = math.min(left, get(k))
    s.counts[k], left = get(k) - taken, left - taken
  end

  local full = 0
  for k = c - n + 1, c do full = full + get(k) end
  local old = get(c - n)
  local weight = 1000 - idiv(e * 1000, w)  -- ceil((w - e) * 1000 / w), with no value above w * 1000
  local estimate = full + idiv(old * weight + 999, 1000)

  local allowed = estimate + cost <= p.limit
  if allowed and hit then
    s.counts[c] = get(c) + cost
    estimate = estimate + cost
  end
  local retry_after = 0
  if not allowed then
    -- s.counts holds no bucket above c, and the search reads none below c - n: as get() would.
    local counts, limit = s.counts, p.limit
    --@fragment sliding_window_retry@
  end
  local newest_counted
  for k = c, c - n, -1 do
    if get(k) > 0 then
      newest_counted = k
      break
    end
  end
  local reset_after = newest_counted and (newest_counted + n + 1) * w - now or 0
  return {allowed, p.limit, math.max(0, p.limit - estimate), reset_after, retry_after, estimate}, now + reset_after
end

-- Called after an allowed hit, and after a refund: the state of buckets c - N .. c, as load_state reads it.
local function save_state(key, s, p, now, expires_at)
  local ttl = ttl_ms(now, expires_at)
  if not ttl then return redis.call('DEL', key) end  -- a refund gave everything back
  local n, c = p.extra, s.c
  local function get(k) return s.counts[k] or 0 end
  local full, last = 0, 0
  for k = c - n + 1, c do full = full + get(k) end
  for j = 1, n - 1 do
    if get(c - j) > 0 then last = j end
  end
  local parts = {struct.pack('<dddd', c, full, get(c), get(c - n))}
  for j = 1, last do parts[j + 1] = struct.pack('<d', get(c - j)) end
  redis.call('SET', key, table.concat(parts), 'PX', ttl)
end
