// Opening stores by URL, and the parts every store shares.
#include "ratewarden/store.hpp"

#include "ratewarden/errors.hpp"
#include "ratewarden/cluster_store.hpp"
#include "ratewarden/memory_store.hpp"
#include "ratewarden/redis_store.hpp"
#include "redis/redis_url.hpp"
#include "url.hpp"

namespace ratewarden {

void Store::decide_many(const StoreCall* calls, size_t n, Decision* out, std::optional<StoreError>* errors) {
  for (size_t i = 0; i < n; ++i) {
    try {
      out[i] = decide(calls[i]);
    } catch (const StoreError& e) {
      errors[i] = e;
    }
  }
}

void validate_key_prefix(const std::string& prefix) {
  if (prefix.empty() || prefix.size() > 256)
    throw InvalidArgument("prefix must be 1 to 256 bytes, got " + std::to_string(prefix.size()));
  if (prefix.find_first_of("{}") != std::string::npos)
    throw InvalidArgument("prefix \"" + prefix + "\" must not contain '{' or '}' (they mark the cluster hash tag)");
}

void Store::set_key_prefix(std::string prefix) {
  validate_key_prefix(prefix);
  key_prefix_ = std::move(prefix);
}

namespace {

std::shared_ptr<Store> open_scheme(Url& url, std::string_view text, Clock clock) {
  if (url.scheme == "memory") {
    if (!url.hosts.empty() || !url.path.empty() || !url.user.empty())
      throw InvalidArgument("invalid store URL \"" + masked_url(text) +
                            "\": memory:// takes no host or path, only ?max_keys=N&shards=N");
    MemoryStoreOptions options;
    options.max_keys = take_int(url, "max_keys", options.max_keys, 1, int64_t{1} << 40);
    options.shards = static_cast<int32_t>(take_int(url, "shards", 0, 1, 65536));
    options.clock = std::move(clock);
    reject_unknown_options(url, text);
    return std::make_shared<MemoryStore>(options);
  }
  if (url.scheme == "redis") {
    RedisStoreOptions options = redis_options_from_url(url, text);
    options.clock = std::move(clock);
    reject_unknown_options(url, text);
    return std::make_shared<RedisStore>(options);
  }
  if (url.scheme == "redis+cluster") {
    ClusterStoreOptions options = cluster_options_from_url(url, text);
    options.clock = std::move(clock);
    reject_unknown_options(url, text);
    return std::make_shared<ClusterStore>(options);
  }
  throw InvalidArgument("unsupported store URL \"" + masked_url(text) +
                        "\": expected memory://, redis:// or redis+cluster://");
}

}  // namespace

std::shared_ptr<Store> open_store(std::string_view text) { return open_store(text, Clock()); }

std::shared_ptr<Store> open_store(std::string_view text, Clock clock) {
  Url url = parse_url(text);
  auto prefix = url.query.find("prefix");
  std::string key_prefix = prefix == url.query.end() ? "rw" : prefix->second;
  if (prefix != url.query.end()) url.query.erase(prefix);
  std::shared_ptr<Store> store = open_scheme(url, text, std::move(clock));
  store->set_key_prefix(key_prefix);
  return store;
}

}  // namespace ratewarden
