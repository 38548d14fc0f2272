// memory://[?max_keys=N&shards=N] into a store (internal).
#pragma once

#include <memory>
#include <string_view>

#include "ratewarden/clock.hpp"
#include "ratewarden/store.hpp"
#include "url.hpp"

namespace ratewarden {

std::shared_ptr<Store> open_memory_url(Url& url, std::string_view text, Clock clock);

}  // namespace ratewarden
