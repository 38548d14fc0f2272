// The Redis schemes' URLs into stores (internal):
//   redis://[user[:password]@]host[:port][/db][?options]      rediss://... (TLS)
//   redis+unix://[user[:password]@]/path/to.sock[?db=N&options]
//   redis+cluster://[user[:password]@]host:port[,host:port...][?options]   rediss+cluster://... (TLS)
//   redis+cluster+unix:///path/a.sock,/path/b.sock,...[?options]  (the socket of every master)
//   redis+sentinel://[user[:password]@]host:port[,host:port...]/service[?db=N&options]   rediss+sentinel://... (TLS)
#pragma once

#include <memory>
#include <string_view>

#include "ratewarden/clock.hpp"
#include "ratewarden/store.hpp"
#include "url.hpp"

namespace ratewarden {

// Take the options they know out of `url` and throw InvalidArgument for what is wrong; messages mask the password.
std::shared_ptr<Store> open_redis_url(Url& url, std::string_view text, Clock clock);
std::shared_ptr<Store> open_cluster_url(Url& url, std::string_view text, Clock clock);
std::shared_ptr<Store> open_sentinel_url(Url& url, std::string_view text, Clock clock);

}  // namespace ratewarden
