// Redis Cluster's key-to-slot mapping (internal).
#pragma once

#include <string_view>

namespace ratewarden {

inline constexpr int kClusterSlots = 16384;

// CRC16 (XMODEM) of the key's hash tag — the part between the first '{' and the next '}' when it is not empty —
// or of the whole key, modulo 16384: where Redis Cluster keeps the key.
int key_slot(std::string_view key);

}  // namespace ratewarden
