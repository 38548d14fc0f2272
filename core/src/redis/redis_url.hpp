// redis:// URLs into store options (internal).
#pragma once

#include <string_view>

#include "ratewarden/redis_store.hpp"
#include "url.hpp"

namespace ratewarden {

// Reads the host, port, credentials, database and the redis options out of `url` (taking the query options it
// knows). Throws InvalidArgument; messages mask the password.
RedisStoreOptions redis_options_from_url(Url& url, std::string_view text);

}  // namespace ratewarden
