#include "hybrid_store.hpp"

#include <algorithm>
#include <atomic>
#include <climits>
#include <tuple>
#include <mutex>
#include <vector>

#include "io/per_process.hpp"
#include "io/io_loop.hpp"
#include "knowledge.hpp"
#include "metrics/emit.hpp"
#include "ratewarden/errors.hpp"
#include "sync_wait.hpp"

namespace ratewarden {
namespace {

using hybrid::CallRef;
using hybrid::Entry;
using hybrid::Knowledge;

constexpr int kShards = 64;
// What is known is used only while the reset log has been read this recently — 3 syncs, and never less than
// kFreshFloorUs, so that a busy machine delaying a round does not turn local answers off: a reset logged anywhere
// is seen within that time, or the process stops answering locally until the log is read again.
constexpr int64_t kFreshSyncs = 3;
constexpr int64_t kFreshFloorUs = 500000;
// How long a lease may be held, in rounds: long enough to be spent, short enough that a key gone quiet does not keep
// cost charged for nothing.
constexpr int64_t kLeaseSyncs = 20;

// The state every call and every background round shares; the rounds hold it weakly and stop when it goes.
struct State : std::enable_shared_from_this<State> {
  State(std::shared_ptr<Store> inner_store, HybridOptions o) : inner(std::move(inner_store)), options(std::move(o)) {}

  const std::shared_ptr<Store> inner;
  const HybridOptions options;
  const bool async = options.mode == HybridMode::async;

  // This process's knowledge: a forked child starts afresh (what the parent holds is left alone: its locks may be
  // held by threads the child does not have, and a lease used by both would be spent twice).
  PerProcess<Knowledge> knowledge;

  // The reset log, read by the background rounds (on the I/O thread).
  std::atomic<int64_t> cursor{-1};
  std::atomic<int64_t> read_ok_at{INT64_MIN};  // monotonic start of the last successful read
  std::atomic<bool> read_in_flight{false};
  // Bumped whenever knowledge is dropped for a reset: an answer to a call sent before teaches nothing.
  std::atomic<uint64_t> invalidations{0};
  std::atomic<bool> closed{false};

  std::atomic<int64_t> store_calls{0}, sync_batches{0}, dropped{0};

  int64_t now() const { return options.clock ? options.clock() : monotonic_now_us(); }
  // The store's URL: the shared store's, with its mode.
  std::string name() const {
    std::string url = inner->describe();
    url += url.find('?') == std::string::npos ? '?' : '&';
    url += async ? "mode=async" : "mode=local_first";
    url += "&sync=" + std::to_string(options.sync_us / 1000) + "ms";
    return url;
  }
  // Whether what is known may be used at `monotonic` (monotonic_now_us's time).
  bool fresh(int64_t monotonic) const {
    const int64_t at = read_ok_at.load(std::memory_order_relaxed);
    return at != INT64_MIN && monotonic - at <= std::max(kFreshSyncs * options.sync_us, kFreshFloorUs);
  }
  // On the I/O thread, in a round (which runs only once this process started).
  Knowledge& known() { return *knowledge.mine(); }

  // This process's knowledge; its first call starts its rounds.
  Knowledge& started();
  void round();
  void read_log();
  void top_up();
  void learn(uint64_t hash, const CallRef& ref, int64_t lease, int64_t charged, const Decision& d, int64_t sent,
             uint64_t seq);
  void end_top_up(uint64_t hash, const CallRef& ref);
  void forward(const StoreCall& call, uint64_t hash, int64_t extra, DecisionCallback done);
};

// The largest lease: a share of the smallest capacity of the call's policies, at least 1.
int64_t max_lease(const std::vector<Policy>& policies, int64_t per_mille) {
  int64_t capacity = INT64_MAX;
  for (const Policy& p : policies) capacity = std::min(capacity, p.capacity());
  return std::max<int64_t>(1, capacity * per_mille / 1000);
}

// A local denial: the store's, aged by the time since it arrived (so never earlier than the store implied).
Decision aged_denial(const Entry& e, int64_t now) {
  Decision d = e.denial;
  const int64_t age = std::max<int64_t>(0, now - e.denied_at);
  d.retry_after_us = std::max<int64_t>(1, d.retry_after_us - age);
  d.reset_after_us = std::max(d.retry_after_us, d.reset_after_us - age);
  return d;
}

// A local admission from the lease: the store's last answer, with what this process still holds counted as
// remaining (an estimate: other processes charge the store too).
Decision from_lease(const Entry& e, int64_t now) {
  Decision d = e.granted;
  d.allowed = true;
  d.retry_after_us = 0;
  d.remaining = std::min(d.limit, d.remaining + e.lease + e.spare);
  d.used = std::max<int64_t>(0, d.limit - d.remaining);
  d.reset_after_us = std::max<int64_t>(0, d.reset_after_us - (now - e.granted_at));
  return d;
}

Knowledge& State::started() {
  bool made = false;
  Knowledge& here = knowledge.get([&] {
    made = true;
    cursor = -1;
    read_ok_at = INT64_MIN;
    read_in_flight = false;
    store_calls = sync_batches = dropped = 0;  // a child counts its own
    return new Knowledge(options.max_keys, kShards);
  });
  if (made) {
    std::weak_ptr<State> weak = shared_from_this();
    IoLoop::current().post([weak] {
      if (auto self = weak.lock()) self->round();
    });
  }
  return here;
}

// One background round, on the I/O thread: read the reset log, top leases up, drop what is of no use; then again
// in `sync`. Rounds stop when the store closes or goes, and in a forked child (which starts its own).
void State::round() {
  if (closed || knowledge.mine() == nullptr) return;
  read_log();
  if (async) top_up();
  if (const int64_t unspent = known().sweep_next(now()); unspent > 0) {
    emit_event(EventKind::lease_expired, name(),
               std::to_string(unspent) + " of cost charged to the store for leases expired unused here (async mode "
               "under-admits by as much; a steadier load wastes less)");
  }
  std::weak_ptr<State> weak = shared_from_this();
  IoLoop& loop = IoLoop::current();
  loop.run_at(loop.now_us() + options.sync_us, [weak] {
    if (auto self = weak.lock()) self->round();
  });
}

void State::read_log() {
  if (read_in_flight.exchange(true)) return;
  ++sync_batches;
  const int64_t started = monotonic_now_us();
  std::weak_ptr<State> weak = shared_from_this();
  inner->read_resets_async(cursor, [weak, started](const ResetLogRead* read, const Error* error) {
    auto self = weak.lock();
    if (!self) return;
    self->read_in_flight = false;
    if (error != nullptr) return;  // what is known goes stale, and calls go to the store, until a read succeeds
    std::string& epoch = self->known().log_epoch;
    const bool new_epoch = read->epoch != epoch;
    if (new_epoch) epoch = read->epoch;
    if (read->gap || (new_epoch && self->cursor >= 0)) {
      self->invalidations.fetch_add(1);
      self->dropped += self->known().forget_all();
    } else {
      for (const std::string& tag : read->tags) {
        self->invalidations.fetch_add(1);
        self->dropped += self->known().forget(tag);
      }
    }
    self->cursor = read->cursor;
    int64_t previous = self->read_ok_at.load();
    while (previous < started && !self->read_ok_at.compare_exchange_weak(previous, started)) {
    }
  });
}

// async: every entry whose leases would not cover another round of its last round's demand gets a spare lease
// that brings them to twice that demand (at most max_lease), all in one batch (one pipeline per node).
void State::top_up() {
  struct TopUp {
    uint64_t hash;
    std::string tag;
    std::vector<std::string> keys;
    std::vector<Policy> policies;
    int64_t cost;
  };
  auto batch = std::make_shared<std::vector<TopUp>>();
  const int64_t t = now();
  known().for_each_in_demand([&](Entry& e) {
    const int64_t demand = e.demand;
    e.demand = 0;
    if (e.topping_up || e.spare > 0 || t < e.deny_until || e.policies.empty()) return;
    // A key asked once in a round is not hot: a lease for it would mostly expire unspent (a flood of distinct keys
    // would double the store's load).
    if (demand < 2) return;
    const int64_t held = e.lease_until > t + options.sync_us ? e.lease : 0;
    if (held >= demand) return;
    const int64_t want = std::min(max_lease(e.policies, options.lease_per_mille), 2 * demand) - held;
    if (want < 1) return;
    e.topping_up = true;
    batch->push_back(TopUp{known().hash(e.tag), e.tag, e.keys, e.policies, want});
  });
  if (batch->empty()) return;
  ++sync_batches;
  std::vector<StoreCall> calls(batch->size());
  for (size_t i = 0; i < batch->size(); ++i) {
    const TopUp& u = (*batch)[i];
    StoreCall& call = calls[i];
    call.policies = u.policies.data();
    call.keys = u.keys.data();
    call.count = u.keys.size();
    call.tag = u.tag;
    call.cost = u.cost;
  }
  const uint64_t seq = invalidations.load();
  std::weak_ptr<State> weak = shared_from_this();
  inner->decide_many_async(
      calls.data(), calls.size(),
      [weak, batch, sent = t, seq](const Decision* decisions, const std::optional<StoreError>* errors) {
        auto self = weak.lock();
        if (!self) return;
        for (size_t i = 0; i < batch->size(); ++i) {
          const TopUp& u = (*batch)[i];
          const CallRef ref{u.tag, u.keys.data(), u.keys.size()};
          if (!errors[i]) self->learn(u.hash, ref, u.cost, u.cost, decisions[i], sent, seq);
          self->end_top_up(u.hash, ref);
        }
      });
}

// What an answer of the store to a call that charged `charged` teaches: a denial until its retry_after (counted
// from the send), or, when it carried a lease (`lease` > 0), the spare lease. Nothing when a reset was seen since
// the call left: the answer may predate it.
void State::learn(uint64_t hash, const CallRef& ref, int64_t lease, int64_t charged, const Decision& d, int64_t sent,
                  uint64_t seq) {
  Knowledge::Shard& shard = known().shard_of(hash);
  std::lock_guard<util::Lock> lock(shard.mu);
  if (invalidations.load() != seq) return;
  const int64_t t = now();
  Entry* e = Knowledge::find(shard, hash, ref);
  if (!d.allowed) {
    if (e == nullptr) e = &known().find_or_add(shard, hash, ref, t);
    e->deny_until = sent + d.retry_after_us;
    e->deny_sent = sent;
    e->deny_cost = charged;
    e->denied_at = t;
    e->denial = d;
    e->expires = std::max(e->expires, e->deny_until);
    return;
  }
  if (e == nullptr) return;
  // Answers come back out of order (several connections): one to a call sent before the denial proves nothing.
  if (sent >= e->deny_sent) e->deny_until = 0;
  if (lease == 0) return;
  // A spare lease: usable until the answer's reset_after (a fixed window's end, less the millisecond the server
  // clock rounds up) and kLeaseSyncs rounds at most.
  e->spare = lease;
  e->spare_until = sent + std::min(std::max<int64_t>(0, d.reset_after_us - 1000), kLeaseSyncs * options.sync_us);
  e->granted = d;
  e->granted_at = t;
  e->expires = std::max(e->expires, e->spare_until);
}

void State::end_top_up(uint64_t hash, const CallRef& ref) {
  Knowledge::Shard& shard = known().shard_of(hash);
  std::lock_guard<util::Lock> lock(shard.mu);
  if (Entry* e = Knowledge::find(shard, hash, ref)) e->topping_up = false;
}

// The call to the store, charging `extra` more for a spare lease (async, a lease run dry): the caller gets the
// decision on its own cost (what the lease took is not its to spend), and if the lease made the call too big, the
// call goes again for its own cost alone.
void State::forward(const StoreCall& call, uint64_t hash, int64_t extra, DecisionCallback done) {
  ++store_calls;
  const uint64_t seq = invalidations.load();
  const int64_t sent = now();
  StoreCall charged = call;
  charged.cost += extra;
  std::weak_ptr<State> weak = shared_from_this();
  // A refund's answer is a peek's, made after it: what the process knew of the key before is replaced by it.
  const bool learns = call.mode == Mode::hit || call.mode == Mode::peek || call.mode == Mode::refund;
  inner->decide_async(charged, [weak, hash, seq, sent, extra, learns, cost = call.cost, tag = std::string(call.tag),
                                keys = std::vector<std::string>(call.keys, call.keys + call.count),
                                policies = std::vector<Policy>(extra > 0 ? call.policies : nullptr,
                                                               extra > 0 ? call.policies + call.count : nullptr),
                                done = std::move(done)](const Decision* d, const Error* error) mutable {
    auto self = weak.lock();
    const CallRef ref{tag, keys.data(), keys.size()};
    if (self && d != nullptr && learns) self->learn(hash, ref, extra, cost + extra, *d, sent, seq);
    if (self && extra > 0) self->end_top_up(hash, ref);
    if (d == nullptr || extra == 0) return done(d, error);
    if (d->allowed) {
      Decision own = *d;
      own.remaining = std::min(own.limit, own.remaining + extra);
      own.used = std::max<int64_t>(0, own.used - extra);
      return done(&own, nullptr);
    }
    if (!self) return done(d, error);
    const StoreCall again{policies.data(), keys.data(), keys.size(), tag, cost, Mode::hit, {}, nullptr};
    self->forward(again, hash, 0, std::move(done));
  });
}

class HybridStore final : public Store {
 public:
  explicit HybridStore(std::shared_ptr<State> state) : state_(std::move(state)) {}
  ~HybridStore() override { close(); }

  // Answers from what the process knows, if it can (a denial the store proved; in async, a lease); in async, counts
  // the call's demand. `hash` is the call's in the knowledge either way.
  // Else, in async, `extra` is what the call to the store should charge for a spare lease (0 for none).
  // `forwarded`: whether a call not answered here goes to the store now. decide_now's does not (its caller makes the
  // call next, which asks again): it counts no demand and asks no spare unless it answers, or every call of the
  // bindings (decide_now first) counted twice, and an idle process's every lone hit charged a spare lease that
  // expired unspent 20 rounds later.
  bool local_answer(const StoreCall& call, uint64_t& hash, Decision& d, int64_t& extra, bool forwarded) {
    extra = 0;
    if (call.keys == nullptr) throw InvalidArgument("a hybrid store takes whole storage keys");
    State& s = *state_;
    Knowledge& known = s.started();
    hash = known.hash(call.tag);
    // A reservation may be admitted where a hit is denied; a cancel and a refund change the store's state: they go
    // to the store.
    if (call.mode == Mode::reserve || call.mode == Mode::cancel || call.mode == Mode::refund) return false;
    const CallRef ref{call.tag, call.keys, call.count};
    Knowledge::Shard& shard = known.shard_of(hash);
    std::lock_guard<util::Lock> lock(shard.mu);
    const int64_t monotonic = shard.clock.now_us();
    if (!s.fresh(monotonic) || s.closed) return false;  // a closed store answers nothing: its calls fail
    const int64_t now = s.options.clock ? s.options.clock() : monotonic;
    Entry* e = Knowledge::find(shard, hash, ref);
    if (e == nullptr && s.async && call.mode == Mode::hit) {
      e = &known.find_or_add(shard, hash, ref, now);
      e->policies.assign(call.policies, call.policies + call.count);
    }
    if (e == nullptr) return false;
    const bool counts = s.async && call.mode == Mode::hit;
    if (counts) e->expires = std::max(e->expires, now + 4 * s.options.sync_us);
    if (now < e->deny_until && call.cost >= e->deny_cost) {
      if (counts) e->demand += call.cost;
      d = aged_denial(*e, now);
      ++shard.local_denials;
      return true;
    }
    if (!s.async) return false;
    if ((now >= e->lease_until || e->lease < call.cost) && e->spare >= call.cost && now < e->spare_until) {
      // The lease is spent (what is left of it, less than the cost, is given up) or expired: the spare takes over.
      e->lease = e->spare;
      e->lease_until = e->spare_until;
      e->spare = 0;
    }
    if (now < e->lease_until && e->lease >= call.cost) {
      if (counts) e->demand += call.cost;
      if (call.mode == Mode::hit) e->lease -= call.cost;
      d = from_lease(*e, now);
      ++shard.local_allows;
      return true;
    }
    if (!forwarded) return false;
    if (counts) e->demand += call.cost;
    // The leases ran dry before the next round: this call to the store brings a spare (one at a time per key).
    if (call.mode == Mode::hit && !e->topping_up && e->spare == 0 && e->demand >= 2) {
      const int64_t room = max_lease(e->policies, s.options.lease_per_mille);
      int64_t capacity = INT64_MAX;
      for (const Policy& p : e->policies) capacity = std::min(capacity, p.capacity());
      extra = std::min({room, 2 * e->demand, capacity - call.cost});
      if (extra < 1) extra = 0;
      else e->topping_up = true;
    }
    return false;
  }

  void decide_async(const StoreCall& call, DecisionCallback done) override {
    uint64_t hash;
    int64_t extra;
    Decision d;
    if (local_answer(call, hash, d, extra, true)) return done(&d, nullptr);
    state_->forward(call, hash, extra, std::move(done));
  }

  // No call is made here: no demand is counted and no spare asked for unless it answers (the call that follows,
  // through decide or decide_async, does).
  bool decide_now(const StoreCall& call, Decision& out) override {
    uint64_t hash;
    int64_t extra;
    return local_answer(call, hash, out, extra, false);
  }

  // A local answer needs no wait, and no turn of the I/O loop: the synchronous form answers it at once.
  Decision decide(const StoreCall& call) override {
    uint64_t hash;
    int64_t extra;
    Decision d;
    if (local_answer(call, hash, d, extra, true)) return d;
    check_may_wait("call");
    SyncWait<Decision> wait;
    run_and_wait(wait, [&] {
      state_->forward(call, hash, extra, [&wait](const Decision* answer, const Error* e) { wait.complete(answer, e); });
    });
    return wait.wait();
  }

  void reset_async(const std::string* keys, size_t count, std::string_view tag, DoneCallback done) override {
    State& s = *state_;
    Knowledge& known = s.started();
    s.invalidations.fetch_add(1);
    s.dropped += known.forget(tag);
    s.inner->reset_async(keys, count, tag, std::move(done));
  }

  void read_resets_async(int64_t cursor, ResetLogCallback done) override {
    state_->inner->read_resets_async(cursor, std::move(done));
  }
  void check_async(DoneCallback done) override { state_->inner->check_async(std::move(done)); }
  void close() override {
    state_->closed = true;
    state_->inner->close();
  }

  StoreTraits traits() const override {
    StoreTraits t = state_->inner->traits();
    t.blocks_on_io = true;
    t.exact = !state_->async;
    t.key_parts = false;
    t.answers_now = true;
    return t;
  }

  StoreStats stats() const override {
    State& s = *state_;
    // In a forked child: its own knowledge, never the parent's (whose locks may be held).
    Knowledge& k = s.started();
    StoreStats out = s.inner->stats();
    out.name = describe();
    out.hybrid = true;
    out.keys = k.size();
    out.max_keys = k.max_entries();
    out.evictions = k.evictions();
    std::tie(out.local_denials, out.local_allows) = k.local_answers();
    out.store_calls = s.store_calls;
    out.sync_batches = s.sync_batches;
    const int64_t at = s.read_ok_at;
    out.sync_lag_us = at == INT64_MIN ? -1 : monotonic_now_us() - at;
    out.invalidations = s.dropped;
    return out;
  }

  std::string describe() const override { return state_->name(); }

 private:
  std::shared_ptr<State> state_;
};

}  // namespace

std::shared_ptr<Store> make_hybrid_store(std::shared_ptr<Store> inner, HybridOptions options) {
  if (!inner) throw InvalidArgument("a hybrid store needs a store");
  const StoreTraits t = inner->traits();
  if (!t.shared || !t.logs_resets)
    throw InvalidArgument("?mode=local_first and ?mode=async apply to stores shared across processes that log "
                          "their resets (redis://, redis+cluster://, ...); " +
                          inner->describe() + " is not one");
  if (options.sync_us < 1000) throw InvalidArgument("sync must be at least 1ms");
  if (options.max_keys < 1) throw InvalidArgument("local_keys must be at least 1");
  auto state = std::make_shared<State>(std::move(inner), std::move(options));
  auto store = std::make_shared<HybridStore>(state);
  store->set_key_prefix(state->inner->key_prefix());
  return store;
}

}  // namespace ratewarden
