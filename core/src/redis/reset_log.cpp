#include "reset_log.hpp"

#include "ratewarden/errors.hpp"
#include "resp.hpp"
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
const std::string kAnnounce = RW_LOG_LAST
    "n = n + 1\n"
    "redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[2], n .. '-1', 't', ARGV[1])\n"
    "redis.call('PEXPIRE', KEYS[1], ARGV[3])\n"
    "return n\n";

// ARGV: cursor, batch (and an unused 0). Returns {cursor, gap (1/0), tag...}.
const std::string kRead = RW_LOG_LAST
    "local c = tonumber(ARGV[1])\n"
    "if c < 0 then return {n, 0} end\n"
    "if n < c then return {n, 1} end\n"
    "if n == c then return {c, 0} end\n"
    "local entries = redis.call('XRANGE', KEYS[1], '(' .. c .. '-1', '+', 'COUNT', ARGV[2])\n"
    "local out = {c, 0}\n"
    "for i, e in ipairs(entries) do\n"
    "  local m = tonumber(string.match(e[1], '^(%d+)'))\n"
    "  if m ~= out[1] + 1 then out[2] = 1 end\n"
    "  out[1] = m\n"
    "  out[#out + 1] = e[2][2]\n"
    "end\n"
    "return out\n";

#undef RW_LOG_LAST

// EVALSHA of `body` with one key and three arguments; EVAL with the body when the server answers NOSCRIPT.
void build_eval(RedisRequest& req, const std::string& body, const std::string& sha, const std::string& key,
                std::string_view a, int64_t b, int64_t c) {
  req.script = &body;
  req.argc = 7;
  RespWriter w(req.command, req.argc);
  w.arg("EVALSHA").arg(sha);
  req.args_offset = req.command.size();
  w.arg("1").arg(key).arg(a).arg(b).arg(c);
}

}  // namespace

std::string reset_log_key(const std::string& prefix) { return prefix + ":{ratewarden-resets}:log"; }

void build_reset_announce(RedisRequest& req, const std::string& log_key, std::string_view tag) {
  static const std::string sha = sha1_hex(kAnnounce);
  build_eval(req, kAnnounce, sha, log_key, tag, kMaxEntries, kLogTtlMs);
}

void build_reset_read(RedisRequest& req, const std::string& log_key, int64_t cursor) {
  static const std::string sha = sha1_hex(kRead);
  build_eval(req, kRead, sha, log_key, std::to_string(cursor), kReadBatch, 0);
}

ResetLogRead to_reset_log_read(const redisReply* r, const std::string& name) {
  const auto bad = [&] { return StoreError(ErrorCode::store_error, name + ": unexpected reply to the reset log read"); };
  if (r == nullptr || r->type != REDIS_REPLY_ARRAY || r->elements < 2) throw bad();
  if (r->element[0]->type != REDIS_REPLY_INTEGER || r->element[1]->type != REDIS_REPLY_INTEGER) throw bad();
  ResetLogRead out;
  out.cursor = r->element[0]->integer;
  out.gap = r->element[1]->integer != 0;
  for (size_t i = 2; i < r->elements; ++i) {
    const redisReply* e = r->element[i];
    if (e->type != REDIS_REPLY_STRING) throw bad();
    out.tags.emplace_back(e->str, e->len);
  }
  return out;
}

}  // namespace ratewarden
