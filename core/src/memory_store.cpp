// memory:// — lock-striped shards, each an LRU list indexed by a hash map; entries expire lazily and are swept when
// a shard needs room, so memory stays bounded by max_keys whatever the key distribution.
#include "ratewarden/memory_store.hpp"

#include <algorithm>
#include <limits>
#include <list>
#include <mutex>
#include <string>
#include <unordered_map>

#include "ratewarden/algorithms.hpp"
#include "ratewarden/errors.hpp"

namespace ratewarden {
namespace {

struct Node {
  std::string key;
  AlgorithmState state;
  int64_t expires_at_us;
};

constexpr size_t kDefaultShards = 256;
constexpr size_t kMinKeysPerShard = 64;

size_t round_up_pow2(size_t n) {
  size_t p = 1;
  while (p < n) p <<= 1;
  return p;
}

}  // namespace

// Each shard sits on its own cache lines so that threads working on different shards do not slow each other.
struct alignas(64) MemoryStore::Shard {
  using List = std::list<Node>;

  std::mutex mu;
  List lru;  // most recently charged first
  std::unordered_map<std::string_view, List::iterator> index;
  size_t capacity = 0;
  int64_t evictions = 0;  // live entries dropped for room
  int64_t min_expiry_us = std::numeric_limits<int64_t>::max();  // no entry expires before this

  // The live node of `key`, or lru.end(). An expired node is dropped: it equals an absent key.
  List::iterator find(std::string_view key, int64_t now) {
    auto it = index.find(key);
    if (it == index.end()) return lru.end();
    if (it->second->expires_at_us > now) return it->second;
    erase(it->second);
    return lru.end();
  }

  void erase(List::iterator node) {
    index.erase(std::string_view(node->key));
    lru.erase(node);
  }

  void touch(List::iterator node) {
    if (node != lru.begin()) lru.splice(lru.begin(), lru, node);
  }

  void note_expiry(int64_t expires_at) { min_expiry_us = std::min(min_expiry_us, expires_at); }

  void insert(std::string_view key, AlgorithmState&& state, int64_t expires_at, int64_t now) {
    if (lru.size() >= capacity) make_room(now);
    lru.push_front(Node{std::string(key), std::move(state), expires_at});
    index.emplace(std::string_view(lru.front().key), lru.begin());
    note_expiry(expires_at);
  }

  // Expired entries go first; only when none has expired does the least recently charged one go.
  void make_room(int64_t now) {
    if (lru.back().expires_at_us > now && min_expiry_us <= now) sweep(now);
    if (lru.size() >= capacity) {
      erase(std::prev(lru.end()));
      ++evictions;
    }
  }

  void sweep(int64_t now) {
    int64_t next = std::numeric_limits<int64_t>::max();
    for (auto it = lru.begin(); it != lru.end();) {
      auto cur = it++;
      if (cur->expires_at_us <= now)
        erase(cur);
      else
        next = std::min(next, cur->expires_at_us);
    }
    min_expiry_us = next;
  }
};

MemoryStore::MemoryStore(MemoryStoreOptions options) : options_(std::move(options)) {
  if (options_.max_keys < 1) throw InvalidArgument("max_keys must be at least 1");
  if (options_.shards < 0 || options_.shards > 65536) throw InvalidArgument("shards must be between 1 and 65536");
  if (!options_.clock) options_.clock = monotonic_now_us;
  size_t shards = round_up_pow2(options_.shards == 0 ? kDefaultShards : static_cast<size_t>(options_.shards));
  // Small bounds get fewer shards, so that a shard can hold enough keys for its LRU order to mean something.
  while (shards > 1 && static_cast<int64_t>(shards * kMinKeysPerShard) > options_.max_keys) shards >>= 1;
  options_.shards = static_cast<int32_t>(shards);
  shards_.reset(new Shard[shards]);
  shard_mask_ = shards - 1;
  // The per-shard bounds add up to max_keys exactly.
  const size_t max_keys = static_cast<size_t>(options_.max_keys);
  for (size_t i = 0; i < shards; ++i) shards_[i].capacity = max_keys / shards + (i < max_keys % shards ? 1 : 0);
}

MemoryStore::~MemoryStore() = default;

MemoryStore::Shard& MemoryStore::shard_for(std::string_view tag) {
  size_t h = std::hash<std::string_view>{}(tag);
  return shards_[(h ^ (h >> 29)) & shard_mask_];
}

Decision MemoryStore::decide(const StoreCall& call) {
  Shard& shard = shard_for(call.tag);
  std::lock_guard<std::mutex> lock(shard.mu);
  // Read inside the lock: time never goes back for the entries of one shard.
  const int64_t now = options_.clock();

  if (call.count == 1) {
    // The common case, without the scratch space below.
    auto node = shard.find(call.keys[0], now);
    AlgorithmState fresh;
    if (node == shard.lru.end()) fresh = fresh_state(call.policies[0].algorithm);
    AlgorithmState* state = node != shard.lru.end() ? &node->state : &fresh;
    int64_t expires_at = 0;
    const Decision d = decide_all(call.policies, &state, 1, now, call.cost, call.mode, &expires_at);
    const bool charged = call.mode == Mode::hit && d.allowed;
    if (node != shard.lru.end()) {
      node->expires_at_us = expires_at;
      shard.note_expiry(expires_at);
      if (charged) shard.touch(node);
    } else if (charged) {
      shard.insert(call.keys[0], std::move(fresh), expires_at, now);
    }
    return d;
  }

  // Scratch space kept per thread: a multi-policy call allocates nothing once the thread has made one.
  thread_local std::vector<Shard::List::iterator> nodes;
  thread_local std::vector<AlgorithmState> fresh;
  thread_local std::vector<AlgorithmState*> states;
  thread_local std::vector<int64_t> expiries;
  const auto none = shard.lru.end();
  nodes.assign(call.count, none);
  fresh.resize(call.count);
  states.resize(call.count);
  expiries.resize(call.count);
  for (size_t i = 0; i < call.count; ++i) {
    nodes[i] = shard.find(call.keys[i], now);
    if (nodes[i] == none) fresh[i] = fresh_state(call.policies[i].algorithm);
    states[i] = nodes[i] != none ? &nodes[i]->state : &fresh[i];
  }
  const Decision d = decide_all(call.policies, states.data(), call.count, now, call.cost, call.mode, expiries.data());
  const bool charged = call.mode == Mode::hit && d.allowed;
  // Update and touch the stored nodes before inserting the new ones, so that making room never evicts them.
  for (size_t i = 0; i < call.count; ++i) {
    if (nodes[i] == none) continue;
    nodes[i]->expires_at_us = expiries[i];
    shard.note_expiry(expiries[i]);
    if (charged) shard.touch(nodes[i]);
  }
  if (charged) {
    for (size_t i = 0; i < call.count; ++i)
      if (nodes[i] == none) shard.insert(call.keys[i], std::move(fresh[i]), expiries[i], now);
  }
  return d;
}

void MemoryStore::reset(const std::string* keys, size_t count, std::string_view tag) {
  Shard& shard = shard_for(tag);
  std::lock_guard<std::mutex> lock(shard.mu);
  for (size_t i = 0; i < count; ++i) {
    auto it = shard.index.find(keys[i]);
    if (it != shard.index.end()) shard.erase(it->second);
  }
}

std::string MemoryStore::describe() const {
  return "memory://?max_keys=" + std::to_string(options_.max_keys) + "&shards=" + std::to_string(options_.shards);
}

int64_t MemoryStore::size() const {
  int64_t total = 0;
  for (size_t i = 0; i <= shard_mask_; ++i) {
    std::lock_guard<std::mutex> lock(shards_[i].mu);
    total += static_cast<int64_t>(shards_[i].lru.size());
  }
  return total;
}

StoreStats MemoryStore::stats() const {
  StoreStats s;
  s.max_keys = options_.max_keys;
  for (size_t i = 0; i <= shard_mask_; ++i) {
    std::lock_guard<std::mutex> lock(shards_[i].mu);
    s.keys += static_cast<int64_t>(shards_[i].lru.size());
    s.evictions += shards_[i].evictions;
  }
  return s;
}

void MemoryStore::sweep() {
  for (size_t i = 0; i <= shard_mask_; ++i) {
    std::lock_guard<std::mutex> lock(shards_[i].mu);
    shards_[i].sweep(options_.clock());
  }
}

}  // namespace ratewarden
