-- ratewarden: shared helpers and argument parsing. The build concatenates prelude.lua .. <algorithm>.lua ..
-- decide_all.lua into one script per row of the algorithm table; each <algorithm>.lua defines load_state, evaluate
-- and save_state, the twin of <algorithm>.cpp next to it (docs/algorithms.md).
--
-- KEYS[i]: the storage key of policy i (docs/key-format.md), all with the same {hash tag}.
-- ARGV[1] = cost, ARGV[2] = "1" hit / "0" peek, ARGV[3] = now in µs, or "" for the server's TIME;
-- then per policy i: ARGV[3i+1] = limit, ARGV[3i+2] = period in µs, ARGV[3i+3] = extra (the value of the
-- algorithm's option: the burst, the bucket count, or 0; Policy::option_value).
-- Returns {allowed (1/0), limit, remaining, reset_after, retry_after, used, policy_index} of the combined decision,
-- policy_index counting from 0.
--
-- Numbers are doubles here: every value stays an integer below 2^53, so +, -, * and comparisons are exact.
-- Numbers are passed to redis.call only as strings (fmt), since Redis may print large doubles in exponent form.

local function fmt(x)
  return string.format('%d', x)
end

-- C++ int64 division (truncates toward zero), for b > 0; exact while a < 2^53.
local function idiv(a, b)
  if a >= 0 then return math.floor(a / b) end
  return -math.floor(-a / b)
end

-- With a test clock (ARGV[3] given) time stands still between steps while the server's TTLs keep running: a grace
-- second keeps a state from expiring early in real time. Decisions never depend on TTLs, only on the stored times.
local ttl_grace_ms = ARGV[3] ~= '' and 1000 or 0

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

local n = #KEYS
local cost = tonumber(ARGV[1])
local hit = ARGV[2] == '1'
-- TIME is read before any write (allowed since Redis 5 with effects replication, the only mode of Redis 7).
local now = tonumber(ARGV[3])
if ARGV[3] == '' then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
if n == 0 or #ARGV ~= 3 + 3 * n or not cost or not now then
  return redis.error_reply('ERR ratewarden: expected 1+ keys, then cost, mode, now and 3 values per key')
end

local policies = {}
for i = 1, n do
  local j = 3 * i
  policies[i] = {limit = tonumber(ARGV[j + 1]), period = tonumber(ARGV[j + 2]), extra = tonumber(ARGV[j + 3])}
end
