// redis:// and redis+cluster:// URLs into store options (internal).
#pragma once

#include <string_view>

#include "ratewarden/cluster_store.hpp"
#include "ratewarden/redis_store.hpp"
#include "url.hpp"

namespace ratewarden {

// Read the hosts, credentials, database and the Redis options out of `url` (taking the query options they know).
// Throw InvalidArgument; messages mask the password.
RedisStoreOptions redis_options_from_url(Url& url, std::string_view text);
ClusterStoreOptions cluster_options_from_url(Url& url, std::string_view text);

}  // namespace ratewarden
