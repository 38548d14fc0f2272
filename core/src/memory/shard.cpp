#include "memory/shard.hpp"

#include <cstring>
#include <new>

namespace ratewarden::memory {
namespace {

constexpr size_t kInitialSlots = 16;

Entry* new_entry(uint64_t hash, const KeyRef& key, AlgorithmState&& state, int64_t expires_at_us) {
  void* memory = ::operator new(sizeof(Entry) + key.size());
  Entry* entry = new (memory) Entry;
  entry->hash = hash;
  entry->expires_at_us = expires_at_us;
  entry->key_size = static_cast<uint32_t>(key.size());
  entry->form = key.form;
  entry->state = std::move(state);
  key.copy_to(reinterpret_cast<char*>(entry + 1));
  return entry;
}

void delete_entry(Entry* entry) {
  entry->~Entry();
  ::operator delete(entry);
}

}  // namespace

// A key whose last 8 bytes are not in one piece (a whole key under 8 bytes), byte by byte in the same order.
uint64_t KeyRef::last_8_bytes_split() const {
  const size_t n = size() < 8 ? size() : 8;
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) {
    size_t at = size() - n + i;
    char c;
    if (at < head.size()) {
      c = head[at];
    } else if ((at -= head.size()) < middle.size()) {
      c = middle[at];
    } else {
      c = tail[at - middle.size()];
    }
    v |= static_cast<uint64_t>(static_cast<unsigned char>(c)) << (8 * i);
  }
  return v;
}

void KeyRef::copy_to(char* out) const {
  for (const std::string_view piece : {head, middle, tail}) {
    if (piece.empty()) continue;  // its data() may be null, which memcpy must never see
    std::memcpy(out, piece.data(), piece.size());
    out += piece.size();
  }
}

Shard::Shard() : slots_(new Slot[kInitialSlots]()), mask_(kInitialSlots - 1) {}

Shard::~Shard() {
  for (Entry* e = newest_; e != nullptr;) {
    Entry* next = e->older;
    delete_entry(e);
    e = next;
  }
}

size_t Shard::slot_of(const Entry* entry) const {
  for (size_t i = entry->hash & mask_;; i = (i + 1) & mask_)
    if (slots_[i].entry == entry) return i;
}

void Shard::grow() {
  const size_t count = (mask_ + 1) * 2;
  std::unique_ptr<Slot[]> slots(new Slot[count]());
  for (size_t i = 0; i <= mask_; ++i) {
    const Slot& s = slots_[i];
    if (s.entry == nullptr) continue;
    size_t j = s.hash & (count - 1);
    while (slots[j].entry != nullptr) j = (j + 1) & (count - 1);
    slots[j] = s;
  }
  slots_ = std::move(slots);
  mask_ = count - 1;
}

bool Shard::insert(uint64_t hash, const KeyRef& key, AlgorithmState&& state, int64_t expires_at_us) {
  if ((size_ + 1) * 4 > (mask_ + 1) * 3) grow();  // load factor <= 3/4
  Entry* entry = new_entry(hash, key, std::move(state), expires_at_us);
  size_t i = hash & mask_;
  while (slots_[i].entry != nullptr) i = (i + 1) & mask_;
  slots_[i] = Slot{hash, entry};
  ++size_;
  place_newest(entry);
  entry->used = entry->placed;
  heap_.push_back(HeapItem{expires_at_us, entry});
  entry->heap_pos = static_cast<uint32_t>(heap_.size() - 1);
  heap_up(heap_.size() - 1);
  return publish_hint();
}

void Shard::erase(Entry* entry) {
  // Linear probing without tombstones: later entries of the probe run shift back into the hole.
  size_t hole = slot_of(entry);
  for (size_t j = (hole + 1) & mask_; slots_[j].entry != nullptr; j = (j + 1) & mask_) {
    const size_t home = slots_[j].hash & mask_;
    // slots_[j] may fill the hole unless its home lies cyclically in (hole, j].
    const bool stays = hole < j ? (hole < home && home <= j) : (hole < home || home <= j);
    if (stays) continue;
    slots_[hole] = slots_[j];
    hole = j;
  }
  slots_[hole] = Slot{0, nullptr};
  --size_;
  unlink(entry);
  heap_remove(entry->heap_pos);
  delete_entry(entry);
  publish_hint();
}

bool Shard::set_earlier_expiry(Entry* entry, int64_t expires_at_us) {
  bool earlier = false;
  HeapItem& item = heap_[entry->heap_pos];
  if (expires_at_us < item.at) {
    item.at = expires_at_us;
    heap_up(entry->heap_pos);
    earlier = publish_hint();
  }
  entry->expires_at_us = expires_at_us;
  return earlier;
}

void Shard::unlink(Entry* entry) {
  (entry->newer != nullptr ? entry->newer->older : newest_) = entry->older;
  (entry->older != nullptr ? entry->older->newer : oldest_) = entry->newer;
  entry->newer = entry->older = nullptr;
}

void Shard::place_newest(Entry* entry) {
  entry->older = newest_;
  if (newest_ != nullptr) newest_->newer = entry;
  newest_ = entry;
  if (oldest_ == nullptr) oldest_ = entry;
  entry->placed = ++uses_;
}

bool Shard::drop_one_expired(int64_t now_us) {
  while (!heap_.empty() && heap_[0].at <= now_us) {
    Entry* entry = heap_[0].entry;
    if (entry->expires_at_us <= now_us) {
      erase(entry);
      return true;
    }
    heap_[0].at = entry->expires_at_us;  // its expiry grew since it was placed: put it where it belongs now
    heap_down(0);
  }
  publish_hint();
  return false;
}

bool Shard::drop_least_recent() {
  if (oldest_ == nullptr) return false;
  // Ends within one pass: an entry moved to the front is placed after its last use.
  while (oldest_->used > oldest_->placed) {
    Entry* second_chance = oldest_;
    unlink(second_chance);
    place_newest(second_chance);
  }
  erase(oldest_);
  return true;
}

void Shard::heap_place(size_t pos, HeapItem item) {
  heap_[pos] = item;
  item.entry->heap_pos = static_cast<uint32_t>(pos);
}

void Shard::heap_up(size_t pos) {
  const HeapItem item = heap_[pos];
  while (pos > 0) {
    const size_t parent = (pos - 1) / 2;
    if (heap_[parent].at <= item.at) break;
    heap_place(pos, heap_[parent]);
    pos = parent;
  }
  heap_place(pos, item);
}

void Shard::heap_down(size_t pos) {
  const HeapItem item = heap_[pos];
  const size_t n = heap_.size();
  for (;;) {
    size_t child = 2 * pos + 1;
    if (child >= n) break;
    if (child + 1 < n && heap_[child + 1].at < heap_[child].at) ++child;
    if (item.at <= heap_[child].at) break;
    heap_place(pos, heap_[child]);
    pos = child;
  }
  heap_place(pos, item);
}

void Shard::heap_remove(size_t pos) {
  const HeapItem last = heap_.back();
  heap_.pop_back();
  if (pos == heap_.size()) return;
  heap_place(pos, last);
  heap_up(pos);
  heap_down(last.entry->heap_pos);
}

bool Shard::publish_hint() {
  const int64_t earliest = heap_.empty() ? kNever : heap_[0].at;
  const int64_t before = hint_.load(std::memory_order_relaxed);
  hint_.store(earliest, std::memory_order_relaxed);
  return earliest < before;
}

}  // namespace ratewarden::memory
