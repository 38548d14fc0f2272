// One lock stripe of the memory store: a hash table of entries, their recency order (LRU), and their expiries in a
// min-heap, so that making room finds an expired entry in O(log n) instead of scanning the shard.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <string_view>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "util/fast_clock.hpp"
#include "util/lock.hpp"
#include "ratewarden/algorithms.hpp"

namespace ratewarden::memory {

// A storage key in up to three pieces (head + middle + tail), as a StoreCall gives it: compared, hashed and copied
// piece by piece, never joined into one string on the hot path. A whole key is a head alone.
struct KeyRef {
  std::string_view head, middle, tail;
  // StoreCall::form of the head and tail (0: none, a whole key): an entry found whole under a form compares only
  // the middle under it from then on.
  uint64_t form = 0;

  size_t size() const { return head.size() + middle.size() + tail.size(); }
  bool equals(std::string_view stored) const {
    const char* p = stored.data();
    return stored.size() == size() && same(p, head) && same(p + head.size(), middle) &&
           same(p + head.size() + middle.size(), tail);
  }
  // The key's last (up to) 8 bytes as a little-endian integer.
  uint64_t last_8_bytes() const {
    if (tail.size() >= 8) return load_le64(tail.data() + tail.size() - 8);  // a limiter's suffix: always
    if (tail.empty() && middle.empty() && head.size() >= 8) return load_le64(head.data() + head.size() - 8);
    return last_8_bytes_split();
  }
  void copy_to(char* out) const;

  // Inline, in words: a key is a few dozen bytes, and memcmp's call and dispatch cost more than comparing them
  // (three pieces a hit). Overlapping loads cover the ends. An empty piece (whose data() may be null) is not read.
  static bool same(const char* a, std::string_view piece) {
    const char* b = piece.data();
    const size_t n = piece.size();
#if defined(__SSE2__)
    if (n >= 16) {
      __m128i diff = _mm_setzero_si128();
      for (size_t i = 0; i + 16 < n; i += 16) diff = _mm_or_si128(diff, _mm_xor_si128(load16(a + i), load16(b + i)));
      diff = _mm_or_si128(diff, _mm_xor_si128(load16(a + n - 16), load16(b + n - 16)));
      return _mm_movemask_epi8(_mm_cmpeq_epi8(diff, _mm_setzero_si128())) == 0xffff;
    }
#endif
    if (n >= 8) {
      uint64_t diff = 0;
      for (size_t i = 0; i + 8 < n; i += 8) diff |= load<uint64_t>(a + i) ^ load<uint64_t>(b + i);
      return (diff | (load<uint64_t>(a + n - 8) ^ load<uint64_t>(b + n - 8))) == 0;
    }
    if (n >= 4)
      return ((load<uint32_t>(a) ^ load<uint32_t>(b)) | (load<uint32_t>(a + n - 4) ^ load<uint32_t>(b + n - 4))) == 0;
    return n == 0 || (a[0] == b[0] && a[n / 2] == b[n / 2] && a[n - 1] == b[n - 1]);
  }
 private:
  uint64_t last_8_bytes_split() const;
  static uint64_t load_le64(const char* p) {
    uint64_t v = load<uint64_t>(p);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
  }
  template <typename Word>
  static Word load(const char* p) {
    Word w;
    std::memcpy(&w, p, sizeof w);
    return w;
  }
#if defined(__SSE2__)
  static __m128i load16(const char* p) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)); }
#endif
};

// One stored state: a storage key's algorithm state, allocated with its key bytes right after it.
struct Entry {
  Entry* newer = nullptr;  // the shard's list, in the order entries were placed in it: toward the newest
  Entry* older = nullptr;
  uint64_t placed = 0;  // the shard's use count when the entry took its place in the list
  uint64_t used = 0;    // ... and when it was last used
  uint64_t hash = 0;
  int64_t expires_at_us = 0;  // the state no longer matters from then on (an expired entry equals an absent key)
  uint32_t heap_pos = 0;
  uint32_t key_size = 0;
  uint64_t form = 0;  // a KeyRef::form its key was last found whole under (or inserted with); 0: none
  AlgorithmState state;

  std::string_view key() const { return {reinterpret_cast<const char*>(this + 1), key_size}; }
  // Whether this is the entry of `key`. Under the form this key was last matched whole under, the head and tail are
  // the same (a form names one head and tail for as long as the process runs): only the size and the middle are
  // compared.
  bool is(const KeyRef& k) {
    if (k.form != 0 && form == k.form)
      return key_size == k.size() && KeyRef::same(reinterpret_cast<const char*>(this + 1) + k.head.size(), k.middle);
    if (!k.equals(key())) return false;
    if (k.form != 0) form = k.form;
    return true;
  }
};

class alignas(64) Shard {
 public:
  static constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

  Shard();
  ~Shard();
  Shard(const Shard&) = delete;
  Shard& operator=(const Shard&) = delete;

  util::Lock mu;
  util::FastClock clock;  // read under mu

  // The entry of `key` (expired or not), or null. Inline: it is most of a hit on a hot key.
  Entry* find(uint64_t hash, const KeyRef& key) const {
    for (size_t i = hash & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.entry == nullptr) return nullptr;
      if (s.hash == hash && s.entry->is(key)) return s.entry;
    }
  }
  // Adds an entry for a key that has none, as the most recently used. Returns true when the shard's earliest
  // expiry moved earlier (the store's global hint must follow).
  bool insert(uint64_t hash, const KeyRef& key, AlgorithmState&& state, int64_t expires_at_us);
  void erase(Entry* entry);
  // Records the entry's new expiry; returns true when the shard's earliest expiry moved earlier. Inline for the
  // usual case, an expiry that does not move earlier (nothing in the heap moves).
  bool set_expiry(Entry* entry, int64_t expires_at_us) {
    if (expires_at_us < entry->expires_at_us) return set_earlier_expiry(entry, expires_at_us);
    entry->expires_at_us = expires_at_us;
    return false;
  }
  // Records a use. The list is not reordered (a hit writes only its own entry, never its neighbours', which
  // other threads' entries would bounce between cores): eviction gives entries used since they were placed a
  // second chance instead.
  void use(Entry* entry) { entry->used = ++uses_; }

  // Drops one expired entry (the earliest to expire) if the shard holds one.
  bool drop_one_expired(int64_t now_us);
  // Drops the least recently used entry, live or not, as CLOCK finds it: the oldest-placed entry not used since it
  // was placed (those used since go to the front, placed anew); false when the shard is empty.
  bool drop_least_recent();

  size_t size() const { return size_; }
  // No entry of this shard expires before this (a lower bound, readable without the lock).
  int64_t earliest_expiry_hint() const { return hint_.load(std::memory_order_relaxed); }

 private:
  struct Slot {
    uint64_t hash;
    Entry* entry;  // null: empty
  };
  // Expiries in a min-heap. `at` may be earlier than the entry's expiry (expiries that grow are not pushed down
  // until the entry reaches the top), never later.
  struct HeapItem {
    int64_t at;
    Entry* entry;
  };

  bool set_earlier_expiry(Entry* entry, int64_t expires_at_us);
  size_t slot_of(const Entry* entry) const;
  void grow();
  void unlink(Entry* entry);
  void place_newest(Entry* entry);
  void heap_place(size_t pos, HeapItem item);
  void heap_up(size_t pos);
  void heap_down(size_t pos);
  void heap_remove(size_t pos);
  bool publish_hint();

  std::unique_ptr<Slot[]> slots_;
  size_t mask_ = 0;  // slot count - 1 (a power of two)
  size_t size_ = 0;
  Entry* newest_ = nullptr;
  Entry* oldest_ = nullptr;
  uint64_t uses_ = 0;
  std::vector<HeapItem> heap_;
  std::atomic<int64_t> hint_{kNever};
};

}  // namespace ratewarden::memory
