// Opening stores by URL, and the parts every store shares.
#include "ratewarden/store.hpp"

#include "ratewarden/errors.hpp"
#include "ratewarden/memory_store.hpp"
#include "url.hpp"

namespace ratewarden {

void Store::decide_many(const StoreCall* calls, size_t n, Decision* out) {
  for (size_t i = 0; i < n; ++i) out[i] = decide(calls[i]);
}

std::shared_ptr<Store> open_store(std::string_view text) {
  Url url = parse_url(text);
  if (url.scheme == "memory") {
    if (!url.hosts.empty() || !url.path.empty() || !url.user.empty())
      throw InvalidArgument("invalid store URL \"" + masked_url(text) +
                            "\": memory:// takes no host or path, only ?max_keys=N&shards=N");
    MemoryStoreOptions options;
    options.max_keys = take_int(url, "max_keys", options.max_keys, 1, int64_t{1} << 40);
    options.shards = static_cast<int32_t>(take_int(url, "shards", 0, 1, 65536));
    reject_unknown_options(url, text);
    return std::make_shared<MemoryStore>(options);
  }
  throw InvalidArgument("unsupported store URL \"" + masked_url(text) + "\": expected memory://");
}

}  // namespace ratewarden
