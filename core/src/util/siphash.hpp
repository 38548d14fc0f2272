// SipHash-1-3 (Aumasson & Bernstein), the keyed hash Python and Rust use for their tables: keys chosen by clients
// (user names, API keys, addresses) cannot be aimed at one shard or one probe chain without knowing the store's
// random key.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace ratewarden::util {

struct SipKey {
  uint64_t k0 = 0;
  uint64_t k1 = 0;
};

// A key from the system's random source, different for every call.
SipKey random_sip_key();

uint64_t siphash13(const SipKey& key, std::string_view data);

}  // namespace ratewarden::util
