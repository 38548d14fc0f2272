-- sliding_window_fast.lua's read of one policy's state (the layout: sliding_window.lua): GET, the 4-number head, and
-- the estimate at `now`. A table of the buckets, `counts`, only where the head alone does not decide (the window moved
-- past the newest stored bucket, it holds nothing, or a denial's retry_after); else counts is nil. Spliced as text by
-- cmake/embed_lua.cmake into both fast paths, with key, cost, limit, n, w and now (moved forward to the state's
-- newest bucket if the clock went back); declares v, size, b, full, cur, old, c, weight, estimate and counts.
-- q - q % 1 is math.floor(q), exactly, without a function call. The general path's twin: load_state and evaluate in
-- sliding_window.lua; tests/conformance/vectors.json and tests/core/differential_test.cpp bind them.
local v = redis.call('GET', key)
local size = v and #v or 0
local b, full, cur, old = nil, 0, 0, 0  -- the head: newest stored bucket, its window's total, its count, b - n's
if size >= 32 and size % 8 == 0 then b, full, cur, old = struct.unpack('<dddd', v) end
if b and b * w > now then now = b * w end  -- a clock that went back: not before the state
local c = now / w
c = c - c % 1
local weight = (now - c * w) * 1000 / w
weight = 1000 - (weight - weight % 1)  -- ceil((w - e) * 1000 / w), with no value above w * 1000
local estimate = (old * weight + 999) / 1000
estimate = full + (estimate - estimate % 1)
-- counts[k] (when > 0) for the buckets c - n .. c, from every stored bucket.
local counts
if b and (b ~= c or cur <= 0 or estimate + cost > limit) then
  counts = {}
  for k = math.max(b - n, c - n), b do
    local x = 0
    if k == b then x = cur elseif k == b - n then x = old elseif 32 + (b - k) * 8 <= size then
      x = struct.unpack('<d', v, 25 + (b - k) * 8)
    end
    if x > 0 then counts[k] = x end
  end
  full = 0
  for k = c - n + 1, c do full = full + (counts[k] or 0) end
  old, cur = counts[c - n] or 0, counts[c] or 0
  estimate = (old * weight + 999) / 1000
  estimate = full + (estimate - estimate % 1)
end
