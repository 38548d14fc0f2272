// The store interface: where the state of every key lives, and who runs the algorithms on it atomically.
//
// The contract every store keeps:
//  - Thread-safe: any method may be called from any thread, concurrently.
//  - Atomic per call: all the policies of one StoreCall are decided together (peek all, charge all only if all
//    allow); no other call sees a state in between.
//  - Bounded: every call ends — with a decision or a StoreError — within the store's timeouts, also when the
//    server hangs or dies. Asynchronous calls complete exactly once.
//  - reset forgets every state of the given keys: the next call on them starts from a fresh state.
//  - Calls made after the process forked use only what belongs to the child (docs/deployment.md, "fork()").
//
// Asynchronous forms (the primary ones for network stores) take a callback that is called exactly once:
//  - on the calling thread, before the method returns, for stores that never wait on I/O (traits().blocks_on_io is
//    false) and for calls that fail at once;
//  - otherwise on the library's I/O thread, which every network store of the process shares.
// Such a callback must not block and must not make synchronous calls to a network store (it would wait for the
// thread it runs on: that throws InvalidArgument). Limiter's asynchronous methods offer Completion::library_thread
// for callbacks that need to do more. What a StoreCall points to need only live until the method returns.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ratewarden/clock.hpp"
#include "ratewarden/decision.hpp"
#include "ratewarden/errors.hpp"
#include "ratewarden/policy.hpp"
#include "ratewarden/stats.hpp"

namespace ratewarden {

class DecisionCounts;

// One decision to make: every policy of one limiter on one user key. `keys[i]` is the storage key of
// `policies[i]` (docs/key-format.md); `tag` is the user key, the part every storage key shares (shard / slot).
struct StoreCall {
  const Policy* policies = nullptr;
  const std::string* keys = nullptr;  // null when the store takes key parts (below) and the caller gives only those
  size_t count = 0;
  std::string_view tag;
  int64_t cost = 1;
  Mode mode = Mode::hit;
  // The same storage keys in parts, when the caller has them: keys[i] == key_head + tag + key_suffixes[i]. A store
  // whose traits say key_parts works from them without the keys ever being built (the memory store's hot path).
  std::string_view key_head;
  const std::string* key_suffixes = nullptr;
  // With the parts: form + i names key_head + key_suffixes[i] for as long as the process runs (never given to
  // other contents), or 0. The memory store compares only the tag of a key it has already matched whole under it.
  uint64_t form = 0;
  // Mode::reserve: the longest wait the caller accepts. Mode::cancel: the reservation's Decision::ticket.
  int64_t max_wait_us = 0;
  int64_t ticket = 0;
  // Where a store whose decision_stripes() is not 0 counts the decisions of hit and reserve calls (null: it does
  // not count them). Set by Limiter only.
  DecisionCounts* counts = nullptr;
  // What decide_all takes for this call's mode.
  int64_t mode_arg() const { return mode == Mode::cancel ? ticket : max_wait_us; }
};

// What a store is, so that callers never need to know which store it is.
struct StoreTraits {
  bool blocks_on_io = false;  // calls wait on a network: bindings release locks (the GIL) and go asynchronous
  bool shared = false;        // other processes see the same state
  bool exact = true;          // admits exactly what the algorithm admits (no local approximation)
  bool key_parts = false;     // decide() takes StoreCall's key parts with keys null (decide_many and reset: keys)
  bool logs_resets = false;   // every reset is logged for other processes: read_resets_async (the hybrid modes)
  bool answers_now = false;   // a network store whose decide_now can answer some calls in-process (hybrid modes)

  // A store on a server every process shares (Redis, Redis Cluster, PostgreSQL): calls wait on the network, and
  // resets are logged for the hybrid modes.
  static constexpr StoreTraits network() {
    StoreTraits t;
    t.blocks_on_io = t.shared = t.logs_resets = true;
    return t;
  }
  // A store in this process that decides from a call's key parts (the memory store).
  static constexpr StoreTraits in_process() {
    StoreTraits t;
    t.key_parts = true;
    return t;
  }
};

// What a read of the reset log returns: the user keys (StoreCall::tag) reset since the cursor, oldest first.
struct ResetLogRead {
  std::vector<std::string> tags;
  int64_t cursor = 0;  // what to pass to the next read
  bool gap = false;    // entries were lost (trimmed, or the log expired): forget everything learnt before
  std::string epoch;   // names the store's data: when it changes, the store lost its data (forget everything too)
};
using ResetLogCallback = std::function<void(const ResetLogRead* read, const Error* error)>;

// Exactly one of `decision` / `error` is set; both are valid only during the call.
using DecisionCallback = std::function<void(const Decision* decision, const Error* error)>;
// One entry per call: errors[i] set when call i failed, else decisions[i] holds its answer. Valid during the call.
using DecisionsCallback = std::function<void(const Decision* decisions, const std::optional<StoreError>* errors)>;
// Null on success.
using DoneCallback = std::function<void(const Error* error)>;

class Store {
 public:
  virtual ~Store() = default;

  virtual void decide_async(const StoreCall& call, DecisionCallback done) = 0;
  // Independent calls, in one round trip where the store can; one call failing does not hide the others' answers.
  virtual void decide_many_async(const StoreCall* calls, size_t n, DecisionsCallback done);
  // Forgets the given storage keys.
  virtual void reset_async(const std::string* keys, size_t count, std::string_view tag, DoneCallback done) = 0;

  // Answers the call at once, in-process, if the store can without waiting on anything (a hybrid mode's local
  // knowledge, an in-process store): true and `out` set; else false, nothing done — make the call. Cheap: bindings
  // try it before releasing the GIL or leaving the event loop.
  virtual bool decide_now(const StoreCall& call, Decision& out);

  // The synchronous forms wait for the asynchronous ones (stores that never block override them). They throw
  // StoreError when the store fails.
  virtual Decision decide(const StoreCall& call);
  // Writes each call's decision to out[i], or its failure to errors[i] (left empty on success).
  virtual void decide_many(const StoreCall* calls, size_t n, Decision* out, std::optional<StoreError>* errors);
  virtual void reset(const std::string* keys, size_t count, std::string_view tag);

  // Stores whose traits say logs_resets: the resets logged after `cursor` (a negative cursor: none, only the
  // cursor of the log's end). Others answer InvalidArgument.
  virtual void read_resets_async(int64_t cursor, ResetLogCallback done);

  // Health: one round trip to the store (for a cluster, to the master of slot 0); done(nullptr) when it answered.
  virtual void check_async(DoneCallback done) = 0;
  void check();  // throws StoreError
  // Ends the store's background work and connections: calls in flight fail, later calls fail at once. Idempotent;
  // the destructor does it too.
  virtual void close() = 0;

  virtual StoreTraits traits() const = 0;
  // What the store can tell about itself at once (stats.hpp); `name` is describe().
  virtual StoreStats stats() const;
  // A store that counts its calls' decisions itself, under its own locks, in StoreCall::counts: how many stripes
  // it writes them to (the memory store: one per shard). 0 (the default): the limiter counts them.
  virtual size_t decision_stripes() const { return 0; }
  // The store's URL with any password masked: safe to log.
  virtual std::string describe() const = 0;

  // The key prefix of limiters that do not set their own (default "rw"; "?prefix=" in the store URL).
  const std::string& key_prefix() const { return key_prefix_; }
  // Throws InvalidArgument for a prefix the key format cannot hold (docs/key-format.md).
  void set_key_prefix(std::string prefix);

 private:
  std::string key_prefix_ = "rw";
};

// A store whose calls never wait on I/O (the memory store): it implements the synchronous forms, and the
// asynchronous ones answer on the calling thread before they return.
class InProcessStore : public Store {
 public:
  void decide_async(const StoreCall& call, DecisionCallback done) override;
  void reset_async(const std::string* keys, size_t count, std::string_view tag, DoneCallback done) override;
  Decision decide(const StoreCall& call) override = 0;
  bool decide_now(const StoreCall& call, Decision& out) override {
    out = decide(call);
    return true;
  }
  void reset(const std::string* keys, size_t count, std::string_view tag) override = 0;
  void check_async(DoneCallback done) override { done(nullptr); }
  void close() override {}
  StoreTraits traits() const override { return StoreTraits::in_process(); }
};

// Throws InvalidArgument unless `prefix` is 1 to 256 bytes without '{' or '}'.
void validate_key_prefix(const std::string& prefix);

// Opens a store from its URL (throws InvalidArgument for a bad one):
//   memory://[?max_keys=N&shards=N]
//   redis://[user[:password]@]host[:port][/db][?timeout=250ms&connect_timeout=1s&pool=4]
//   rediss://... (TLS: ?tls_ca=&tls_cert=&tls_key=&tls_sni=&tls_verify=)     redis+unix:///path/to.sock[?db=N]
//   redis+cluster://[user[:password]@]host:port[,host:port...][?...]       rediss+cluster://... (TLS)
//   redis+cluster+unix:///path/a.sock,/path/b.sock,...   (the Unix socket of every master)
//   postgres://[user[:password]@]host[:port][/dbname][?schema=ratewarden&table=limits&timeout=1s&connect_timeout=1s
//       &pool=8&create=1&unlogged=1&sweep=1s&sweep_blocks=64&host=/unix/socket/dir]      (also postgresql://)
// Network stores also take ?circuit_failures=N&circuit_backoff=D (docs/deployment.md). Shared stores take
// ?mode=exact (the default), ?mode=local_first[&sync=10ms] or ?mode=async[&sync=50ms&lease=1] and &local_keys=N
// (docs/hybrid.md). Every scheme takes ?prefix=P, the store's key_prefix.
std::shared_ptr<Store> open_store(std::string_view url);
// For tests: the same, with time from `clock` (µs) — the memory store's clock, or the "now" the Redis scripts and
// the PostgreSQL functions get instead of reading the server's clock. An empty clock means the usual one.
std::shared_ptr<Store> open_store(std::string_view url, Clock clock);

// The store of `url` as this process shares it — what Python's open_store, Node's Limiter given a URL and the C
// ABI's rw_store_open_shared call. A shared store's URL names a server: while something holds the store opened for
// that URL string, the same Store is returned, so the limiters on it share one connection pool. memory:// names no
// place: each call opens a new, empty store. Either way, opening by URL never changes what is counted. The process
// holds the stores weakly: one that nothing holds is closed as usual.
std::shared_ptr<Store> open_shared_store(std::string_view url);

}  // namespace ratewarden
