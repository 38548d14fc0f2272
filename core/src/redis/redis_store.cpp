#include "ratewarden/redis_store.hpp"

#include "connection.hpp"
#include "ratewarden/errors.hpp"
#include "resp.hpp"
#include "scripts.hpp"

namespace ratewarden {
namespace {

// The script's calling convention (core/src/lua/prelude.lua): KEYS = one storage key per policy; ARGV = cost,
// mode, now (empty: the server's TIME), then limit, period_us, extra for each policy.
void build_script_call(RedisRequest& req, const StoreCall& call, const std::string& now) {
  const LuaScript& script = lua_script(call.policies[0].algorithm);
  const size_t argc = 3 + call.count + 3 + 3 * call.count;
  req.script = &script.body;
  req.argc = argc;
  RespWriter w(req.command, argc);
  w.arg("EVALSHA").arg(script.sha);
  req.args_offset = req.command.size();
  w.arg(static_cast<int64_t>(call.count));
  for (size_t i = 0; i < call.count; ++i) w.arg(call.keys[i]);
  w.arg(call.cost).arg(call.mode == Mode::hit ? "1" : "0").arg(now);
  for (size_t i = 0; i < call.count; ++i) {
    const Policy& p = call.policies[i];
    const int64_t extra = p.uses_burst() ? p.burst : p.algorithm == Algorithm::sliding_window ? p.buckets : 0;
    w.arg(p.limit).arg(p.period_us).arg(extra);
  }
}

[[noreturn]] void throw_reply_error(const RedisRequest& req, const std::string& name) {
  if (!req.error_message.empty()) throw StoreError(req.error, req.error_message);
  const redisReply* r = req.reply.get();
  if (r != nullptr && r->type == REDIS_REPLY_ERROR) throw StoreError(ErrorCode::store_error, name + ": " + r->str);
  throw StoreError(ErrorCode::store_error, name + ": unexpected reply");
}

Decision to_decision(const RedisRequest& req, const std::string& name) {
  const redisReply* r = req.reply.get();
  if (!req.error_message.empty() || r == nullptr || r->type != REDIS_REPLY_ARRAY || r->elements != 6)
    throw_reply_error(req, name);
  int64_t v[6];
  for (size_t i = 0; i < 6; ++i) {
    if (r->element[i]->type != REDIS_REPLY_INTEGER) throw_reply_error(req, name);
    v[i] = r->element[i]->integer;
  }
  return Decision{v[0] == 1, v[1], v[2], v[3], v[4], v[5]};
}

}  // namespace

RedisStore::RedisStore(RedisStoreOptions options) : options_(std::move(options)) {
  if (options_.pool < 1 || options_.pool > 64) throw InvalidArgument("pool must be between 1 and 64");
  if (options_.timeout_us < 1000 || options_.connect_timeout_us < 1000)
    throw InvalidArgument("timeouts must be at least 1 ms");
  if (options_.port < 1 || options_.port > 65535) throw InvalidArgument("port must be between 1 and 65535");
  endpoint_ = std::make_unique<RedisEndpoint>();
  endpoint_->host = options_.host;
  endpoint_->port = options_.port;
  endpoint_->user = options_.user;
  endpoint_->password = options_.password;
  endpoint_->db = options_.db;
  endpoint_->connect_timeout_us = options_.connect_timeout_us;
  endpoint_->timeout_us = options_.timeout_us;
  endpoint_->name = describe();
  for (int i = 0; i < options_.pool; ++i) pool_.push_back(std::make_unique<RedisConnection>(*endpoint_));
}

RedisStore::~RedisStore() = default;

RedisConnection& RedisStore::next_connection() {
  return *pool_[next_.fetch_add(1, std::memory_order_relaxed) % pool_.size()];
}

Decision RedisStore::decide(const StoreCall& call) {
  RedisRequest req;
  build_script_call(req, call, options_.clock ? std::to_string(options_.clock()) : std::string());
  RedisRequest* p = &req;
  next_connection().execute(&p, 1);
  return to_decision(req, endpoint_->name);
}

// One pipeline for the whole batch; each call gets its own answer or error.
void RedisStore::decide_many(const StoreCall* calls, size_t n, Decision* out, std::optional<StoreError>* errors) {
  if (n == 0) return;
  std::vector<RedisRequest> reqs(n);
  std::vector<RedisRequest*> ptrs(n);
  const std::string now = options_.clock ? std::to_string(options_.clock()) : std::string();
  for (size_t i = 0; i < n; ++i) {
    build_script_call(reqs[i], calls[i], now);
    ptrs[i] = &reqs[i];
  }
  next_connection().execute(ptrs.data(), n);
  for (size_t i = 0; i < n; ++i) {
    try {
      out[i] = to_decision(reqs[i], endpoint_->name);
    } catch (const StoreError& e) {
      errors[i] = e;
    }
  }
}

void RedisStore::reset(const std::string* keys, size_t count, std::string_view) {
  RedisRequest req;
  RespWriter w(req.command, 1 + count);
  w.arg("DEL");
  for (size_t i = 0; i < count; ++i) w.arg(keys[i]);
  RedisRequest* p = &req;
  next_connection().execute(&p, 1);
  if (!req.error_message.empty() || req.reply == nullptr || req.reply->type != REDIS_REPLY_INTEGER)
    throw_reply_error(req, endpoint_->name);
}

std::string RedisStore::describe() const {
  std::string auth;
  if (!options_.user.empty() || options_.password) auth = options_.user + (options_.password ? ":***" : "") + "@";
  std::string host = options_.host.find(':') != std::string::npos ? "[" + options_.host + "]" : options_.host;
  return "redis://" + auth + host + ":" + std::to_string(options_.port) + "/" + std::to_string(options_.db) +
         "?timeout=" + std::to_string(options_.timeout_us / 1000) + "ms&connect_timeout=" +
         std::to_string(options_.connect_timeout_us / 1000) + "ms&pool=" + std::to_string(options_.pool);
}

}  // namespace ratewarden
