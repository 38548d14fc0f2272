#include "ratewarden/redis_store.hpp"

#include <vector>

#include "commands.hpp"
#include "node.hpp"
#include "ratewarden/errors.hpp"

namespace ratewarden {

RedisStore::RedisStore(RedisStoreOptions options) : options_(std::move(options)) {
  validate_client_options(options_);
  if (options_.port < 1 || options_.port > 65535) throw InvalidArgument("port must be between 1 and 65535");
  node_ = std::make_unique<RedisNode>(options_, options_.host, options_.port, options_.db, describe());
}

RedisStore::~RedisStore() = default;

Decision RedisStore::decide(const StoreCall& call) {
  RedisRequest req;
  build_script_call(req, call, script_now(options_.clock));
  node_->execute(req);
  return to_decision(req, node_->name());
}

// One pipeline for the whole batch; each call gets its own answer or error.
void RedisStore::decide_many(const StoreCall* calls, size_t n, Decision* out, std::optional<StoreError>* errors) {
  if (n == 0) return;
  std::vector<RedisRequest> reqs(n);
  std::vector<RedisRequest*> ptrs(n);
  const std::string now = script_now(options_.clock);
  for (size_t i = 0; i < n; ++i) {
    build_script_call(reqs[i], calls[i], now);
    ptrs[i] = &reqs[i];
  }
  node_->execute(ptrs.data(), n);
  for (size_t i = 0; i < n; ++i) {
    try {
      out[i] = to_decision(reqs[i], node_->name());
    } catch (const StoreError& e) {
      errors[i] = e;
    }
  }
}

void RedisStore::reset(const std::string* keys, size_t count, std::string_view) {
  RedisRequest req;
  build_delete(req, keys, count);
  node_->execute(req);
  expect_reply(req, REDIS_REPLY_INTEGER, node_->name());
}

std::string RedisStore::describe() const {
  return "redis://" + describe_auth(options_) + describe_host(options_.host, options_.port) + "/" +
         std::to_string(options_.db) + describe_query(options_);
}

}  // namespace ratewarden
