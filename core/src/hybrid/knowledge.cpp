#include "knowledge.hpp"

#include <algorithm>

namespace ratewarden::hybrid {

namespace {

// At most max_entries shards (no more shards than entries), and a power of two of them (placed by a mask).
int64_t shard_count(int64_t max_entries, int shards) {
  int64_t n = 1;
  while (n * 2 <= std::min<int64_t>(shards, max_entries)) n *= 2;
  return n;
}

}  // namespace

// max_entries in all: each shard's share rounded down, and what is left one more each to the first shards (a power
// of two of them need not divide max_entries).
Knowledge::Knowledge(int64_t max_entries, int shards)
    : max_entries_(max_entries),
      hash_key_(util::random_sip_key()),
      shard_mask_(static_cast<size_t>(shard_count(max_entries, shards)) - 1) {
  const int64_t n = static_cast<int64_t>(shard_mask_) + 1;
  for (int64_t i = 0; i < n; ++i) {
    shards_.push_back(std::make_unique<Shard>());
    shards_.back()->capacity = max_entries / n + (i < max_entries % n ? 1 : 0);
  }
}

namespace {

bool same_keys(const Entry& e, const CallRef& call) {
  if (e.keys.size() != call.count || e.tag != call.tag) return false;
  for (size_t i = 0; i < call.count; ++i)
    if (e.keys[i] != call.keys[i]) return false;
  return true;
}

}  // namespace

// Drops the entries `gone` says, from the table entry `it`; returns the next one.
template <typename Gone>
Knowledge::Table::iterator drop_if(Knowledge::Shard& shard, Knowledge::Table::iterator it, Gone gone) {
  auto& entries = it->second;
  const size_t before = entries.size();
  entries.erase(std::remove_if(entries.begin(), entries.end(), gone), entries.end());
  shard.entries -= static_cast<int64_t>(before - entries.size());
  return entries.empty() ? shard.by_hash.erase(it) : std::next(it);
}

Entry* Knowledge::find(Shard& shard, uint64_t hash, const CallRef& call) {
  auto it = shard.by_hash.find(hash);
  if (it == shard.by_hash.end()) return nullptr;
  for (Entry& e : it->second)
    if (same_keys(e, call)) return &e;
  return nullptr;
}

Entry& Knowledge::find_or_add(Shard& shard, uint64_t hash, const CallRef& call, int64_t now) {
  if (Entry* e = find(shard, hash, call)) return *e;
  if (shard.entries >= shard.capacity) {
    const auto useless = [now](const Entry& x) { return x.expires <= now && !x.topping_up; };
    for (auto it = shard.by_hash.begin(); it != shard.by_hash.end() && shard.entries >= shard.capacity;)
      it = drop_if(shard, it, useless);
    if (shard.entries >= shard.capacity) {
      // Every entry is of use: one table entry goes (the table's first; a cache forgets, it never lies).
      auto it = shard.by_hash.begin();
      evictions_ += static_cast<int64_t>(it->second.size());
      drop_if(shard, it, [](const Entry&) { return true; });
    }
  }
  auto& entries = shard.by_hash[hash];
  entries.emplace_back();
  Entry& e = entries.back();
  e.tag.assign(call.tag.data(), call.tag.size());
  e.keys.assign(call.keys, call.keys + call.count);
  ++shard.entries;
  return e;
}

int64_t Knowledge::forget(std::string_view tag) {
  const uint64_t h = hash(tag);
  Shard& shard = shard_of(h);
  std::lock_guard<util::Lock> lock(shard.mu);
  auto it = shard.by_hash.find(h);
  if (it == shard.by_hash.end()) return 0;
  const int64_t before = shard.entries;
  drop_if(shard, it, [tag](const Entry& x) { return x.tag == tag; });
  return before - shard.entries;
}

int64_t Knowledge::forget_all() {
  int64_t n = 0;
  for (auto& shard : shards_) {
    std::lock_guard<util::Lock> lock(shard->mu);
    n += shard->entries;
    shard->by_hash.clear();
    shard->entries = 0;
  }
  return n;
}

int64_t Knowledge::sweep_next(int64_t now) {
  Shard& shard = *shards_[next_sweep_++ & shard_mask_];
  std::lock_guard<util::Lock> lock(shard.mu);
  int64_t unspent = 0;
  for (auto it = shard.by_hash.begin(); it != shard.by_hash.end();) {
    it = drop_if(shard, it, [now, &unspent](const Entry& x) {
      const bool gone = x.expires <= now && !x.topping_up;
      if (gone) unspent += x.lease + x.spare;
      return gone;
    });
  }
  return unspent;
}

std::pair<int64_t, int64_t> Knowledge::local_answers() {
  std::pair<int64_t, int64_t> out{0, 0};
  for (auto& shard : shards_) {
    std::lock_guard<util::Lock> lock(shard->mu);
    out.first += shard->local_denials;
    out.second += shard->local_allows;
  }
  return out;
}

int64_t Knowledge::size() {
  int64_t n = 0;
  for (auto& shard : shards_) {
    std::lock_guard<util::Lock> lock(shard->mu);
    n += shard->entries;
  }
  return n;
}

}  // namespace ratewarden::hybrid
