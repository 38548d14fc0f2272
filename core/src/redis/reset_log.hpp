// The log of resets that the Redis stores keep for the hybrid modes (docs/hybrid.md), in one stream per key prefix:
// "<prefix>:{ratewarden-resets}:log". Every reset appends the user key it reset, under the entry id "<n>-1" where n
// counts the log's entries; readers keep the last n they read, so a lost entry (the stream is trimmed to about
// 10,000 entries, and expires a day after the last reset) shows as a gap. Beside it, "...:epoch" names the store's
// data: a store that lost it (restarted empty, flushed) gets a new epoch, which readers also take as a gap
// (internal).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "ratewarden/store.hpp"
#include "request.hpp"

namespace ratewarden {

std::string reset_log_key(const std::string& prefix);
std::string reset_epoch_key(const std::string& log_key);
// Appends `tag` to the log.
void build_reset_announce(RedisRequest& req, const std::string& log_key, std::string_view tag);
// Reads what follows `cursor` (at most 1,000 entries; the rest at the next read).
void build_reset_read(RedisRequest& req, const std::string& log_key, int64_t cursor);
// The read's reply; throws StoreError for anything unexpected.
ResetLogRead to_reset_log_read(const redisReply* reply, const std::string& name);

}  // namespace ratewarden
