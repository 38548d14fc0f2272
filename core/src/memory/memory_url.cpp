#include "memory/memory_url.hpp"

#include "ratewarden/errors.hpp"
#include "ratewarden/memory_store.hpp"

namespace ratewarden {

std::shared_ptr<Store> open_memory_url(Url& url, std::string_view text, Clock clock) {
  if (!url.hosts.empty() || !url.path.empty() || !url.user.empty())
    invalid_url(text, "memory:// takes no host or path, only ?max_keys=N&shards=N");
  MemoryStoreOptions options;
  options.max_keys = take_int(url, "max_keys", options.max_keys, 1, MemoryStore::kMaxKeysLimit);
  options.shards = static_cast<int32_t>(take_int(url, "shards", 0, 1, 65536));
  options.clock = std::move(clock);
  reject_unknown_options(url, text);
  return std::make_shared<MemoryStore>(options);
}

}  // namespace ratewarden
