// postgres:// and postgresql:// URLs into stores (internal):
//   postgres://[user[:password]@]host[:port][/dbname][?schema=ratewarden&table=limits&timeout=1s&
//       connect_timeout=1s&pool=8&create=1&unlogged=1&sweep=1s&host=/unix/socket/dir]
#pragma once

#include <memory>
#include <string_view>

#include "ratewarden/clock.hpp"
#include "ratewarden/store.hpp"
#include "url.hpp"

namespace ratewarden {

std::shared_ptr<Store> open_postgres_url(Url& url, std::string_view text, Clock clock);

}  // namespace ratewarden
