// Opening stores by URL: each scheme is one entry of the table below; open_store knows no store by name.
#include <string>

#include "memory_url.hpp"
#include "postgres/pg_url.hpp"
#include "ratewarden/errors.hpp"
#include "ratewarden/store.hpp"
#include "redis/redis_url.hpp"
#include "url.hpp"

namespace ratewarden {
namespace {

// Takes the options it knows out of the URL, throws InvalidArgument for what is wrong (rejecting the rest).
using StoreFactory = std::shared_ptr<Store> (*)(Url& url, std::string_view text, Clock clock);

struct Scheme {
  const char* name;
  StoreFactory open;
};

constexpr Scheme kSchemes[] = {
    {"memory", &open_memory_url},         {"redis", &open_redis_url},
    {"rediss", &open_redis_url},          {"redis+unix", &open_redis_url},
    {"redis+cluster", &open_cluster_url}, {"rediss+cluster", &open_cluster_url},
    {"redis+cluster+unix", &open_cluster_url},
    {"postgres", &open_postgres_url},     {"postgresql", &open_postgres_url},
};

std::string known_schemes() {
  std::string out;
  for (const Scheme& s : kSchemes) out += (out.empty() ? "" : ", ") + std::string(s.name) + "://";
  return out;
}

}  // namespace

std::shared_ptr<Store> open_store(std::string_view text) { return open_store(text, Clock()); }

std::shared_ptr<Store> open_store(std::string_view text, Clock clock) {
  Url url = parse_url(text);
  auto prefix = url.query.find("prefix");
  std::string key_prefix = prefix == url.query.end() ? "rw" : prefix->second;
  if (prefix != url.query.end()) url.query.erase(prefix);
  for (const Scheme& scheme : kSchemes) {
    if (url.scheme != scheme.name) continue;
    std::shared_ptr<Store> store = scheme.open(url, text, std::move(clock));
    store->set_key_prefix(key_prefix);
    return store;
  }
  throw InvalidArgument("unsupported store URL \"" + masked_url(text) + "\": expected " + known_schemes());
}

}  // namespace ratewarden
