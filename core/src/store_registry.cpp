// Opening stores by URL: each scheme is one entry of the table below; open_store knows no store by name.
#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string>

#include "hybrid/hybrid_store.hpp"
#include "memory/memory_url.hpp"
#include "metrics/registry.hpp"
#ifdef RATEWARDEN_WITH_POSTGRES
#include "postgres/pg_url.hpp"
#endif
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

#ifndef RATEWARDEN_WITH_POSTGRES
// Built where libpq's header was missing (cmake/dependencies.cmake): say so rather than "unsupported".
std::shared_ptr<Store> open_postgres_url(Url&, std::string_view text, Clock) {
  throw InvalidArgument("store URL \"" + masked_url(text) +
                        "\": this build of ratewarden has no PostgreSQL store (it was built without libpq's header, "
                        "libpq-fe.h); build it with libpq-dev installed (docs/deployment.md, \"PostgreSQL\")");
}
#endif

constexpr Scheme kSchemes[] = {
    {"memory", &open_memory_url},         {"redis", &open_redis_url},
    {"rediss", &open_redis_url},          {"redis+unix", &open_redis_url},
    {"redis+cluster", &open_cluster_url}, {"rediss+cluster", &open_cluster_url},
    {"redis+cluster+unix", &open_cluster_url},
    {"redis+sentinel", &open_sentinel_url}, {"rediss+sentinel", &open_sentinel_url},
    {"postgres", &open_postgres_url},     {"postgresql", &open_postgres_url},
};

std::string known_schemes() {
  std::string out;
  for (const Scheme& s : kSchemes) out += (out.empty() ? "" : ", ") + std::string(s.name) + "://";
  return out;
}

// ?mode=exact|local_first|async, ?sync=, ?local_keys=, ?lease= (docs/hybrid.md); none when the mode is exact.
std::optional<HybridOptions> take_hybrid_options(Url& url, std::string_view text) {
  auto mode = url.query.find("mode");
  if (mode == url.query.end()) {
    for (const char* name : {"sync", "local_keys", "lease"})
      if (url.query.count(name) != 0)
        invalid_url(text, std::string(name) + "= applies to ?mode=local_first or ?mode=async");
    return std::nullopt;
  }
  const std::string name = mode->second;
  url.query.erase(mode);
  HybridOptions o;
  if (name == "exact") return take_hybrid_options(url, text);
  if (name == "local_first") {
    o.mode = HybridMode::local_first;
    o.sync_us = 10000;
  } else if (name == "async") {
    o.mode = HybridMode::async;
    o.sync_us = 50000;
  } else {
    invalid_url(text, "mode must be exact, local_first or async, got \"" + name.substr(0, 50) + "\"");
  }
  o.sync_us = take_duration_us(url, "sync", o.sync_us);
  o.max_keys = take_int(url, "local_keys", o.max_keys, 1, int64_t{1} << 32);
  auto lease = url.query.find("lease");
  if (lease != url.query.end()) {
    if (o.mode != HybridMode::async)
      invalid_url(text, "lease= applies to ?mode=async");
    std::string v = lease->second;
    if (!v.empty() && v.back() == '%') v.pop_back();
    char* end = nullptr;
    const double percent = std::strtod(v.c_str(), &end);
    if (v.empty() || *end != '\0' || !(percent > 0 && percent <= 100))
      invalid_url(text, "lease must be a percentage in (0, 100], got \"" + lease->second.substr(0, 50) + "\"");
    o.lease_per_mille = std::max<int64_t>(1, static_cast<int64_t>(percent * 10 + 0.5));
    url.query.erase(lease);
  }
  return o;
}

}  // namespace

std::shared_ptr<Store> open_store(std::string_view text) { return open_store(text, Clock()); }

std::shared_ptr<Store> open_store(std::string_view text, Clock clock) {
  Url url = parse_url(text);
  auto prefix = url.query.find("prefix");
  std::string key_prefix = prefix == url.query.end() ? "rw" : prefix->second;
  if (prefix != url.query.end()) url.query.erase(prefix);
  std::optional<HybridOptions> hybrid = take_hybrid_options(url, text);
  for (const Scheme& scheme : kSchemes) {
    if (url.scheme != scheme.name) continue;
    if (hybrid) hybrid->clock = clock;
    std::shared_ptr<Store> store = scheme.open(url, text, std::move(clock));
    store->set_key_prefix(key_prefix);
    if (hybrid) store = make_hybrid_store(std::move(store), std::move(*hybrid));
    return registered_store(std::move(store));
  }
  throw InvalidArgument("unsupported store URL \"" + masked_url(text) + "\": expected " + known_schemes());
}

}  // namespace ratewarden
