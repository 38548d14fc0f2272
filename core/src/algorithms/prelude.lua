-- ratewarden: shared helpers and argument parsing. The build concatenates [<algorithm>_fast.lua ..] prelude.lua ..
-- <algorithm>.lua .. decide_all.lua into one script per row of the algorithm table; each <algorithm>.lua defines
-- load_state, evaluate and save_state, the twin of <algorithm>.cpp next to it (docs/algorithms.md). An optional
-- <algorithm>_fast.lua comes first: fast paths that return before any function is created (a script's body runs
-- afresh on every call, so every `local function` below is a new closure each time): one policy with no table at
-- all and a one-integer reply, several policies with arrays of numbers only; it falls through to here for the calls
-- it does not take (fixed_window: a test clock).
--
-- KEYS[i]: the storage key of policy i (docs/key-format.md), all with the same {hash tag}.
-- ARGV[1] = cost, ARGV[2] = "1" hit / "0" peek / "f" refund (gcra_fast.lua also takes "r<max_wait µs>" reserve
-- and "c<ticket>" cancel), ARGV[3] = now in µs, or "" for the server's TIME;
-- then per policy i: ARGV[3i+1] = limit, ARGV[3i+2] = period in µs, ARGV[3i+3] = extra (the value of the
-- algorithm's option: the burst, the bucket count, or 0; Policy::option_value).
-- Returns, for one policy: {allowed (1/0), remaining, reset_after, retry_after[, used]} — the limit is the policy's
-- capacity and `used` is left out when it equals limit - remaining (core/src/redis/commands.cpp, to_decision) — or,
-- from <algorithm>_fast.lua, one integer that carries the decision (the file says how);
-- for several policies: {allowed, limit, remaining, reset_after, retry_after, used, policy_index}, policy_index
-- counting from 0.
--
-- Numbers are doubles here: every value stays an integer below 2^53, so +, -, * and comparisons are exact.
-- Numbers are passed to redis.call only as strings (fmt), since Redis may print large doubles in exponent form.
-- The scripts keep to locals: no table is built per call where a local does (tables cost an allocation each).

local function fmt(x)
  return string.format('%d', x)
end

-- C++ int64 division (truncates toward zero), for b > 0; exact while a < 2^53.
local function idiv(a, b)
  if a >= 0 then return math.floor(a / b) end
  return -math.floor(-a / b)
end

local n = #KEYS
local cost = tonumber(ARGV[1])
local hit = ARGV[2] == '1'
-- The test clock's time, or nil: the server's TIME is then read by clock(), only by the algorithms that need it.
local test_now = ARGV[3] ~= '' and tonumber(ARGV[3]) or nil
if n == 0 or #ARGV ~= 3 + 3 * n or not cost or (ARGV[3] ~= '' and not test_now) then
  return redis.error_reply('ERR ratewarden: expected 1+ keys, then cost, mode, now and 3 values per key')
end
-- "f" refund: every policy gives back, then decides as a peek (decide_all.lua). Reserve and cancel: gcra_fast.lua
-- took every call it can decide.
if ARGV[2] ~= '1' and ARGV[2] ~= '0' and ARGV[2] ~= 'f' then
  return redis.error_reply('ERR ratewarden: mode ' .. ARGV[2] .. ' is taken by gcra and token_bucket only')
end
-- evaluate gives back `cost` of the newest charges first (docs/algorithms.md, "Refunds"); save_state then writes
-- a live state whatever the decision, and deletes one that holds nothing any more.
local refunding = ARGV[2] == 'f'

-- With a test clock (ARGV[3] given) time stands still between steps while the server's TTLs keep running: a grace
-- second keeps a state from expiring early in real time. Decisions never depend on TTLs, only on the stored times
-- (fixed_window, which reads its window from the TTL under the server clock, keeps its start under a test clock).
local ttl_grace_ms = test_now and 1000 or 0

-- The current time in µs. Called before any write (TIME after a write is refused by Redis < 7 without effects
-- replication; Redis 7 allows it, but a clock read first keeps the script deterministic in what it writes).
local function clock()
  if test_now then return test_now end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end

-- The TTL (ms, as a string) that keeps a state until expires_at, rounded up; nil when it has already expired.
local function ttl_ms(now, expires_at)
  if expires_at <= now then return nil end
  return fmt(math.floor((expires_at - now + 999) / 1000) + ttl_grace_ms)
end

-- Writes a HASH state's fields and its TTL, or deletes the key when the state has already expired.
local function save_fields(key, now, expires_at, ...)
  local ttl = ttl_ms(now, expires_at)
  if not ttl then return redis.call('DEL', key) end
  redis.call('HSET', key, ...)
  redis.call('PEXPIRE', key, ttl)
end

-- Set by the algorithm: false when evaluate never reads `now` under the server clock.
local needs_clock = true
