-- sliding_window's retry_after for a denial: the first instant at which the estimate leaves room for `cost`. Bucket
-- cc (from c on) is tried with full2, the sum of buckets cc - n + 1 .. cc slid along with cc, and the oldest bucket
-- cc - n weighted by the overlap still to come. Spliced as text by cmake/embed_lua.cmake into evaluate in
-- sliding_window.lua and into the fast paths of sliding_window_fast.lua (fragments/sliding_window_decide.lua), with
-- counts[k] the count of bucket k (nil for none; no bucket above c), c, n, w, now, limit, cost and full (buckets
-- c - n + 1 .. c); sets retry_after. All values are integers >= 0 here, so math.floor is C++'s division.
-- Its twins: the retry loop of sliding_window.cpp (the reference) and of sliding_window.sql;
-- tests/conformance/vectors.json and tests/core/differential_test.cpp bind the three.
local full2 = full
for cc = c, c + n + 1 do
  if cc > c then full2 = full2 + (counts[cc] or 0) - (counts[cc - n] or 0) end
  local old2 = counts[cc - n] or 0
  local room = limit - cost - full2
  if room >= 0 then
    local offset = 0
    if old2 > 0 then
      local q = math.floor(room * 1000 / old2)
      offset = q >= 1000 and 0 or w - math.floor(q * w / 1000)
    end
    if offset < w then
      retry_after = math.max(cc * w + offset, now) - now
      break
    end
  end
end
