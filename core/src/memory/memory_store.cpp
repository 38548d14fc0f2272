// memory:// — lock-striped shards (memory/shard.hpp) under one global bound. Keys are placed by a keyed hash of
// the user key (SipHash-1-3 with a random key per store), so clients cannot aim keys at one shard or probe chain.
#include "ratewarden/memory_store.hpp"

#include <string>
#include <thread>
#include <vector>

#include "memory/shard.hpp"
#include "metrics/decision_counts.hpp"
#include "metrics/emit.hpp"
#include "util/siphash.hpp"
#include "ratewarden/algorithms.hpp"
#include "ratewarden/errors.hpp"

namespace ratewarden {

using memory::Entry;
using memory::KeyRef;
using memory::Shard;

namespace {

constexpr size_t kDefaultShards = 256;
constexpr size_t kMinKeysPerShard = 64;
constexpr int kTryLockSpins = 64;

size_t round_up_pow2(size_t n) {
  size_t p = 1;
  while (p < n) p <<= 1;
  return p;
}

// A storage key's slot hash: the keyed hash of its user key, told apart from the other policies and limiters on
// the same user key by the key's last 8 bytes (its policy, chosen by the application, never by the client).
uint64_t entry_hash(uint64_t tag_hash, const KeyRef& key) {
  uint64_t tail = key.last_8_bytes() * 0x9E3779B97F4A7C15ULL;
  return tag_hash ^ tail ^ (tail >> 29);
}

// Storage key i of a call: whole, or in the parts the limiter built it from.
KeyRef key_of(const StoreCall& call, size_t i) {
  if (call.keys != nullptr) return KeyRef{call.keys[i], {}, {}};
  return KeyRef{call.key_head, call.tag, call.key_suffixes[i], call.form == 0 ? 0 : call.form + i};
}

bool try_lock(util::Lock& mu) {
  for (int i = 0; i < kTryLockSpins; ++i)
    if (mu.try_lock()) return true;
  return false;
}

}  // namespace

MemoryStore::MemoryStore(MemoryStoreOptions options)
    : options_(std::move(options)),
      own_clock_(!options_.clock),
      sip_key_(new util::SipKey(util::random_sip_key())),
      earliest_expiry_hint_(Shard::kNever) {
  if (options_.max_keys < 1 || options_.max_keys > kMaxKeysLimit)
    throw InvalidArgument("max_keys must be between 1 and " + std::to_string(kMaxKeysLimit));
  if (options_.shards < 0 || options_.shards > 65536) throw InvalidArgument("shards must be between 1 and 65536");
  size_t shards = round_up_pow2(options_.shards == 0 ? kDefaultShards : static_cast<size_t>(options_.shards));
  // Small bounds get fewer shards, so that a shard's LRU order covers enough keys to mean something.
  while (shards > 1 && static_cast<int64_t>(shards * kMinKeysPerShard) > options_.max_keys) shards >>= 1;
  options_.shards = static_cast<int32_t>(shards);
  shards_.reset(new Shard[shards]);
  shard_mask_ = shards - 1;
  enroll();
}

MemoryStore::~MemoryStore() { leave(); }

Shard& MemoryStore::shard_for(uint64_t tag_hash) const { return shards_[stripe_of(tag_hash)]; }

size_t MemoryStore::shard_of(std::string_view user_key) const {
  return static_cast<size_t>(&shard_for(util::siphash13(*sip_key_, user_key)) - shards_.get());
}

int64_t MemoryStore::now_in(Shard& shard) const {
  if (!own_clock_) return options_.clock();
  return shard.clock.now_us();  // under the shard's lock: its time never goes back
}

void MemoryStore::lower_hint(int64_t at_us) {
  std::lock_guard<std::mutex> lock(hint_mu_);
  if (at_us < earliest_expiry_hint_.load(std::memory_order_relaxed))
    earliest_expiry_hint_.store(at_us, std::memory_order_relaxed);
}

bool MemoryStore::drop_expired_elsewhere(const Shard& own, int64_t now_us) {
  const size_t start = static_cast<size_t>(&own - shards_.get());
  bool skipped = false;
  for (size_t i = 1; i <= shard_mask_; ++i) {
    Shard& s = shards_[(start + i) & shard_mask_];
    if (s.earliest_expiry_hint() > now_us) continue;
    if (!try_lock(s.mu)) {
      skipped = true;
      continue;
    }
    const bool dropped = s.drop_one_expired(now_us);
    s.mu.unlock();
    if (dropped) {
      expired_dropped();
      return true;
    }
  }
  if (!skipped) {
    // Every shard said "later" (the hint was stale: expiries grew): raise the hint to what they say.
    std::lock_guard<std::mutex> lock(hint_mu_);
    int64_t earliest = Shard::kNever;
    for (size_t i = 0; i <= shard_mask_; ++i) earliest = std::min(earliest, shards_[i].earliest_expiry_hint());
    earliest_expiry_hint_.store(earliest, std::memory_order_relaxed);
  }
  return false;
}

void MemoryStore::evicted(int64_t now_us) {
  const int64_t evictions = evictions_.fetch_add(1, std::memory_order_relaxed) + 1;
  entries_.fetch_sub(1, std::memory_order_relaxed);
  int64_t next = next_eviction_event_us_.load(std::memory_order_relaxed);
  if (now_us < next || !next_eviction_event_us_.compare_exchange_strong(next, now_us + 1000000)) return;
  const int64_t since = evictions - evictions_told_.exchange(evictions, std::memory_order_relaxed);
  emit_event(EventKind::live_evictions, describe(),
             std::to_string(since) + " live key state(s) evicted to stay within max_keys=" +
                 std::to_string(options_.max_keys) + " (" + std::to_string(evictions) +
                 " in all): limits on them restart; raise max_keys");
}

void MemoryStore::make_room(Shard& own, int64_t now_us) {
  // Reserve the new entry's place first, so that threads inserting at once never overshoot the bound together.
  if (entries_.fetch_add(1, std::memory_order_relaxed) < options_.max_keys) return;
  const bool dropped_here = own.drop_one_expired(now_us);
  if (dropped_here) expired_dropped();
  if (dropped_here ||
      (earliest_expiry_hint_.load(std::memory_order_relaxed) <= now_us && drop_expired_elsewhere(own, now_us))) {
    entries_.fetch_sub(1, std::memory_order_relaxed);
    return;
  }
  // Every entry is live: the least recently used goes.
  if (own.drop_least_recent()) return evicted(now_us);
  // This shard is empty (the others hold every entry, or will once the inserts they reserved are done): take one
  // from another; their locks are held only for a call at a time.
  const size_t start = static_cast<size_t>(&own - shards_.get());
  for (size_t i = 1;; ++i) {
    // Room may have appeared meanwhile (a reset, an entry dropped by another insert): the reservation fits.
    if (entries_.load(std::memory_order_relaxed) <= options_.max_keys) return;
    Shard& s = shards_[(start + i) & shard_mask_];
    if (&s == &own) {
      std::this_thread::yield();
      continue;
    }
    if (!s.mu.try_lock()) continue;
    const bool dropped = s.drop_least_recent();
    s.mu.unlock();
    if (dropped) return evicted(now_us);
  }
}

void MemoryStore::insert(Shard& shard, uint64_t hash, const memory::KeyRef& key, AlgorithmState&& state,
                         int64_t expires_at_us, int64_t now_us) {
  make_room(shard, now_us);
  if (shard.insert(hash, key, std::move(state), expires_at_us)) lower_hint(shard.earliest_expiry_hint());
}

// The common case, without the scratch space of several policies. One return of one named decision: the
// algorithm writes straight into the caller's result. Inline in decide: one call's frame fewer on every hit.
__attribute__((always_inline)) inline Decision MemoryStore::decide_one(Shard& shard, uint64_t tag_hash, int64_t now,
                                                                       const StoreCall& call) {
  const bool hit = call.mode == Mode::hit;
  const KeyRef key = key_of(call, 0);
  const uint64_t hash = entry_hash(tag_hash, key);
  Entry* entry = shard.find(hash, key);
  // One policy decides alone (decide_all's one-policy case, without its copies).
  Decision d;
  if (entry != nullptr && entry->expires_at_us > now) {  // a live state, decided in place: the usual case
    const int64_t expires_at = evaluate(entry->state, now, call.policies[0], call.cost, call.mode, d);
    if (hit && call.counts != nullptr) call.counts->add_locked(stripe_of(tag_hash), d.allowed, call.cost);
    if (shard.set_expiry(entry, expires_at)) lower_hint(shard.earliest_expiry_hint());
    if (hit) shard.use(entry);  // a denial is a use too: a hammered key stays
    return d;
  }
  AlgorithmState fresh = fresh_state(call.policies[0].algorithm);
  const int64_t expires_at = evaluate(fresh, now, call.policies[0], call.cost, call.mode, d);
  if (hit && call.counts != nullptr) call.counts->add_locked(stripe_of(tag_hash), d.allowed, call.cost);
  if (!hit || !d.allowed) return d;  // nothing to keep: an absent key stays absent
  if (entry != nullptr) {  // an expired entry is reused as a new one
    entry->state = std::move(fresh);
    if (shard.set_expiry(entry, expires_at)) lower_hint(shard.earliest_expiry_hint());
    shard.use(entry);
  } else {
    insert(shard, hash, key, std::move(fresh), expires_at, now);
  }
  return d;
}

Decision MemoryStore::decide(const StoreCall& call) {
  const uint64_t ticks = own_clock_ ? util::FastClock::ticks() : 0;  // first: the hash runs while it is read
  const uint64_t tag_hash = util::siphash13(*sip_key_, call.tag);
  Shard& shard = shard_for(tag_hash);
  std::lock_guard<util::Lock> lock(shard.mu);
  // The time of the call, made no earlier than the last one given under this lock: time never goes back for the
  // entries of one shard.
  const int64_t now = own_clock_ ? shard.clock.now_us(ticks) : options_.clock();
  if (call.count == 1 && (call.mode == Mode::hit || call.mode == Mode::peek))
    return decide_one(shard, tag_hash, now, call);
  return decide_several(shard, tag_hash, now, call);
}

// Every other call: several policies, or a mode that decide_all maps (reserve, cancel, refund).
__attribute__((noinline)) Decision MemoryStore::decide_several(Shard& shard, uint64_t tag_hash, int64_t now,
                                                               const StoreCall& call) {
  const bool hit = charges(call.mode);
  // Scratch space kept per thread: a multi-policy call allocates nothing once the thread has made one. One
  // thread_local for all of it: in a shared library (the Node and Python modules) each costs a call per use.
  struct Scratch {
    std::vector<Entry*> entries;
    std::vector<uint64_t> hashes;
    std::vector<AlgorithmState> fresh;
    std::vector<AlgorithmState*> states;
    std::vector<int64_t> expiries;
  };
  thread_local Scratch scratch;
  auto& [entries, hashes, fresh, states, expiries] = scratch;
  entries.resize(call.count);
  hashes.resize(call.count);
  fresh.resize(call.count);
  states.resize(call.count);
  expiries.resize(call.count);
  for (size_t i = 0; i < call.count; ++i) {
    hashes[i] = entry_hash(tag_hash, key_of(call, i));
    Entry* entry = shard.find(hashes[i], key_of(call, i));
    const bool live = entry != nullptr && entry->expires_at_us > now;
    entries[i] = entry;
    if (!live) fresh[i] = fresh_state(call.policies[i].algorithm);
    states[i] = live ? &entry->state : &fresh[i];
  }
  const Decision d = decide_all(call.policies, states.data(), call.count, now, call.cost, call.mode, expiries.data(),
                              call.mode_arg());
  if (call.counts != nullptr && (call.mode == Mode::hit || call.mode == Mode::reserve))
    call.counts->add_locked(stripe_of(tag_hash), d.allowed, call.cost);
  // A refund changes live states only: an absent key has nothing to give back.
  const bool charged = hit && d.allowed && call.mode != Mode::refund;
  // Update and use the stored entries before inserting the new ones, so that making room never evicts them.
  for (size_t i = 0; i < call.count; ++i) {
    Entry* entry = entries[i];
    const bool live = states[i] != &fresh[i];
    if (entry == nullptr || (!live && !charged)) continue;
    if (!live) entry->state = std::move(fresh[i]);
    if (shard.set_expiry(entry, expiries[i])) lower_hint(shard.earliest_expiry_hint());
    if (hit) shard.use(entry);
  }
  if (charged) {
    for (size_t i = 0; i < call.count; ++i)
      if (entries[i] == nullptr) insert(shard, hashes[i], key_of(call, i), std::move(fresh[i]), expiries[i], now);
  }
  return d;
}

void MemoryStore::reset(const std::string* keys, size_t count, std::string_view tag) {
  const uint64_t tag_hash = util::siphash13(*sip_key_, tag);
  Shard& shard = shard_for(tag_hash);
  std::lock_guard<util::Lock> lock(shard.mu);
  for (size_t i = 0; i < count; ++i) {
    const KeyRef key{keys[i], {}, {}};
    Entry* entry = shard.find(entry_hash(tag_hash, key), key);
    if (entry == nullptr) continue;
    shard.erase(entry);
    entries_.fetch_sub(1, std::memory_order_relaxed);
  }
}

std::string MemoryStore::describe() const {
  return "memory://?max_keys=" + std::to_string(options_.max_keys) + "&shards=" + std::to_string(options_.shards);
}

StoreStats MemoryStore::stats() const {
  StoreStats s;
  s.name = describe();
  s.keys = size();
  s.max_keys = options_.max_keys;
  s.evictions = evictions_.load(std::memory_order_relaxed);
  s.expired_drops = expired_drops_.load(std::memory_order_relaxed);
  return s;
}

int64_t MemoryStore::size() const {
  int64_t total = 0;
  for (size_t i = 0; i <= shard_mask_; ++i) {
    std::lock_guard<util::Lock> lock(shards_[i].mu);
    total += static_cast<int64_t>(shards_[i].size());
  }
  return total;
}

void MemoryStore::sweep() {
  for (size_t i = 0; i <= shard_mask_; ++i) {
    Shard& shard = shards_[i];
    std::lock_guard<util::Lock> lock(shard.mu);
    const int64_t now = now_in(shard);
    while (shard.drop_one_expired(now)) {
      entries_.fetch_sub(1, std::memory_order_relaxed);
      expired_dropped();
    }
  }
}

}  // namespace ratewarden
