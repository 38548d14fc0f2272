#include "util/siphash.hpp"

#include <cstring>
#include <random>

namespace ratewarden::util {
namespace {

inline uint64_t rotl(uint64_t x, int b) { return (x << b) | (x >> (64 - b)); }

struct State {
  uint64_t v0, v1, v2, v3;

  void round() {
    v0 += v1;
    v1 = rotl(v1, 13);
    v1 ^= v0;
    v0 = rotl(v0, 32);
    v2 += v3;
    v3 = rotl(v3, 16);
    v3 ^= v2;
    v0 += v3;
    v3 = rotl(v3, 21);
    v3 ^= v0;
    v2 += v1;
    v1 = rotl(v1, 17);
    v1 ^= v2;
    v2 = rotl(v2, 32);
  }

  void absorb(uint64_t m) {  // one compression round per 8-byte word: the "1" of SipHash-1-3
    v3 ^= m;
    round();
    v0 ^= m;
  }
};

inline uint64_t load_le64(const unsigned char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  v = __builtin_bswap64(v);
#endif
  return v;
}

inline uint64_t load_le32(const unsigned char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  v = __builtin_bswap32(v);
#endif
  return v;
}

// The r (0..7) bytes at p as a little-endian integer, without a loop over them: most keys end with a few bytes, and
// the hash is on every call's path. Overlapping loads: bytes both read land on the same bits.
inline uint64_t load_last(const unsigned char* p, size_t r, size_t n) {
  if (n >= 8) return r == 0 ? 0 : load_le64(p + r - 8) >> (64 - 8 * r);  // the 8 bytes ending where the data ends
  if (r >= 4) return load_le32(p) | (load_le32(p + r - 4) << (8 * (r - 4)));
  if (r == 0) return 0;
  return p[0] | (uint64_t{p[r / 2]} << (8 * (r / 2))) | (uint64_t{p[r - 1]} << (8 * (r - 1)));
}

}  // namespace

SipKey random_sip_key() {
  std::random_device random;  // getrandom(2) on Linux
  auto word = [&random] { return (static_cast<uint64_t>(random()) << 32) | random(); };
  SipKey key;
  key.k0 = word();
  key.k1 = word();
  return key;
}

uint64_t siphash13(const SipKey& key, std::string_view data) {
  State s{key.k0 ^ 0x736f6d6570736575ULL, key.k1 ^ 0x646f72616e646f6dULL, key.k0 ^ 0x6c7967656e657261ULL,
          key.k1 ^ 0x7465646279746573ULL};
  const auto* p = reinterpret_cast<const unsigned char*>(data.data());
  const size_t n = data.size();
  const unsigned char* end = p + (n & ~size_t{7});
  for (; p != end; p += 8) s.absorb(load_le64(p));
  // The last 0..7 bytes, with the length's low byte on top.
  s.absorb(load_last(p, n & 7, n) | (static_cast<uint64_t>(n) << 56));
  s.v2 ^= 0xff;
  s.round();
  s.round();
  s.round();
  return s.v0 ^ s.v1 ^ s.v2 ^ s.v3;
}

}  // namespace ratewarden::util
