#include "reset_log.hpp"

#include <initializer_list>

#include "ratewarden/errors.hpp"
#include "resp.hpp"
#include "scripts.hpp"
#include "sha1.hpp"

namespace ratewarden {
namespace {

constexpr int64_t kMaxEntries = 10000;
constexpr int64_t kLogTtlMs = 86400000;
constexpr int64_t kReadBatch = 1000;

// The n of the log's newest entry, 0 for an empty (or expired) log.
#define RW_LOG_LAST                                                          \
  "local newest = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)\n" \
  "local n = 0\n"                                                            \
  "if newest[1] then n = tonumber(string.match(newest[1][1], '^(%d+)')) end\n"

// ARGV: tag, max entries, ttl (ms). Returns the entry's n.
const char kAnnounce[] = RW_LOG_LAST
    "n = n + 1\n"
    "redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[2], n .. '-1', 't', ARGV[1])\n"
    "redis.call('PEXPIRE', KEYS[1], ARGV[3])\n"
    "return n\n";

// KEYS: the log, its epoch. ARGV: cursor, batch, ttl (ms). Returns {cursor, gap (1/0), epoch, tag...}. The epoch is
// made (the server's time) when missing: a store that lost its data (restarted empty, flushed) has a new one, which
// readers take as a gap even when the log was empty before.
const char kRead[] = RW_LOG_LAST
    "local epoch = redis.call('GET', KEYS[2])\n"
    "if not epoch then\n"
    "  local t = redis.call('TIME')\n"
    "  epoch = t[1] .. '.' .. t[2]\n"
    "  redis.call('SET', KEYS[2], epoch, 'PX', ARGV[3])\n"
    "end\n"
    "local c = tonumber(ARGV[1])\n"
    "if c < 0 then return {n, 0, epoch} end\n"
    "if n < c then return {n, 1, epoch} end\n"
    "if n == c then return {c, 0, epoch} end\n"
    "local entries = redis.call('XRANGE', KEYS[1], '(' .. c .. '-1', '+', 'COUNT', ARGV[2])\n"
    "local out = {c, 0, epoch}\n"
    "for i, e in ipairs(entries) do\n"
    "  local m = tonumber(string.match(e[1], '^(%d+)'))\n"
    "  if m ~= out[1] + 1 then out[2] = 1 end\n"
    "  out[1] = m\n"
    "  out[#out + 1] = e[2][2]\n"
    "end\n"
    "return out\n";

#undef RW_LOG_LAST

// EVALSHA of `script` with its keys (one or two) and three arguments; EVAL with its body when the server answers
// NOSCRIPT. The scripts are made on first use and never destroyed: the I/O thread (a hybrid store's background
// rounds) may still send one while the process exits and runs its static destructors.
void build_eval(RedisRequest& req, const LuaScript& script, std::initializer_list<std::string_view> keys,
                std::string_view a, int64_t b, int64_t c) {
  req.script = &script.body;
  req.argc = 3 + keys.size() + 3;
  RespWriter w(req.command, req.argc);
  w.arg("EVALSHA").arg(script.sha);
  req.args_offset = req.command.size();
  w.arg(static_cast<int64_t>(keys.size()));
  for (std::string_view k : keys) w.arg(k);
  w.arg(a).arg(b).arg(c);
}

}  // namespace

std::string reset_log_key(const std::string& prefix) { return prefix + ":{ratewarden-resets}:log"; }

std::string reset_epoch_key(const std::string& log_key) { return log_key.substr(0, log_key.size() - 3) + "epoch"; }

void build_reset_announce(RedisRequest& req, const std::string& log_key, std::string_view tag) {
  static const LuaScript* script = new LuaScript{kAnnounce, sha1_hex(kAnnounce)};
  build_eval(req, *script, {log_key}, tag, kMaxEntries, kLogTtlMs);
}

void build_reset_read(RedisRequest& req, const std::string& log_key, int64_t cursor) {
  static const LuaScript* script = new LuaScript{kRead, sha1_hex(kRead)};
  build_eval(req, *script, {log_key, reset_epoch_key(log_key)}, std::to_string(cursor), kReadBatch, kLogTtlMs);
}

ResetLogRead to_reset_log_read(const redisReply* r, const std::string& name) {
  const auto bad = [&] { return StoreError(ErrorCode::store_error, name + ": unexpected reply to the reset log read"); };
  if (r == nullptr || r->type != REDIS_REPLY_ARRAY || r->elements < 3) throw bad();
  if (r->element[0]->type != REDIS_REPLY_INTEGER || r->element[1]->type != REDIS_REPLY_INTEGER ||
      r->element[2]->type != REDIS_REPLY_STRING)
    throw bad();
  ResetLogRead out;
  out.cursor = r->element[0]->integer;
  out.gap = r->element[1]->integer != 0;
  out.epoch.assign(r->element[2]->str, r->element[2]->len);
  for (size_t i = 3; i < r->elements; ++i) {
    const redisReply* e = r->element[i];
    if (e->type != REDIS_REPLY_STRING) throw bad();
    out.tags.emplace_back(e->str, e->len);
  }
  return out;
}

}  // namespace ratewarden
