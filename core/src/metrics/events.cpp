#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>

#include "io/callback_thread.hpp"
#include "io/fork_guard.hpp"
#include "io/io_loop.hpp"
#include "io/per_process.hpp"
#include "metrics/emit.hpp"
#include "ratewarden/clock.hpp"

namespace ratewarden {
namespace {

constexpr int64_t kEventGapUs = 1000000;
constexpr size_t kMaxSlots = 10000;  // sources are stores and servers: bounded by configuration

// One rate limit: a kind (or a pair of kinds) from one source.
struct Slot {
  int64_t last_us = INT64_MIN / 2;
  bool flush_scheduled = false;
  std::optional<Event> pending;
  int64_t replaced = 0;
};

struct Events {
  ForkSafeMutex mu;
  std::shared_ptr<const EventHandler> handler;
  std::atomic<bool> has_handler{false};
  // This process's (PerProcess): a forked child starts afresh. A fork can come while another thread changes the
  // parent's map (the child gets mu unlocked, not what it guards), and the parent's flush timers are not the child's.
  PerProcess<std::map<std::string, Slot>> slots;
  std::map<std::string, Slot>& mine() {
    return slots.get([] { return new std::map<std::string, Slot>; });
  }
};

Events& events() {
  static auto* e = new Events;  // never destroyed: events come from threads that outlive static destruction
  return *e;
}

void deliver(const std::shared_ptr<const EventHandler>& handler, Event event) {
  run_on_callback_thread([handler, event = std::move(event)] { (*handler)(event); });
}

// The events that share a rate limit: a transition and the one back.
int group_of(EventKind kind) {
  switch (kind) {
    case EventKind::store_recovered: return static_cast<int>(EventKind::store_failed);
    case EventKind::circuit_closed: return static_cast<int>(EventKind::circuit_opened);
    default: return static_cast<int>(kind);
  }
}

void flush(const std::string& key) {
  Events& e = events();
  std::lock_guard<ForkSafeMutex> lock(e.mu);
  std::map<std::string, Slot>& slots = e.mine();
  auto it = slots.find(key);
  if (it == slots.end()) return;
  Slot& slot = it->second;
  slot.flush_scheduled = false;
  if (!slot.pending || !e.handler) return;
  slot.pending->suppressed = slot.replaced;
  slot.last_us = monotonic_now_us();
  deliver(e.handler, std::move(*slot.pending));
  slot.pending.reset();
  slot.replaced = 0;
}

}  // namespace

void set_event_handler(EventHandler handler) {
  Events& e = events();
  std::lock_guard<ForkSafeMutex> lock(e.mu);
  e.handler = handler ? std::make_shared<const EventHandler>(std::move(handler)) : nullptr;
  e.has_handler.store(e.handler != nullptr, std::memory_order_relaxed);
}

void emit_event(EventKind kind, const std::string& store, std::string message, const std::string& source) {
  Events& e = events();
  if (!e.has_handler.load(std::memory_order_relaxed)) return;
  const std::string key = std::to_string(group_of(kind)) + " " + (source.empty() ? store : source);
  const int64_t now = monotonic_now_us();
  int64_t flush_at = 0;
  {
    std::lock_guard<ForkSafeMutex> lock(e.mu);
    if (!e.handler) return;
    std::map<std::string, Slot>& slots = e.mine();
    auto it = slots.find(key);
    if (it == slots.end()) {
      if (slots.size() >= kMaxSlots) return;
      it = slots.emplace(key, Slot{}).first;
    }
    Slot& slot = it->second;
    Event event{kind, store, std::move(message), 0};
    if (!slot.flush_scheduled && now - slot.last_us >= kEventGapUs) {
      slot.last_us = now;
      deliver(e.handler, std::move(event));
      return;
    }
    if (slot.pending) ++slot.replaced;
    slot.pending = std::move(event);
    if (slot.flush_scheduled) return;
    slot.flush_scheduled = true;
    flush_at = slot.last_us + kEventGapUs;
  }
  IoLoop& loop = IoLoop::current();
  loop.post([&loop, flush_at, key] { loop.run_at(flush_at, [key] { flush(key); }); });
}

const char* event_kind_name(EventKind kind) {
  switch (kind) {
    case EventKind::store_failed: return "store_failed";
    case EventKind::store_recovered: return "store_recovered";
    case EventKind::circuit_opened: return "circuit_opened";
    case EventKind::circuit_closed: return "circuit_closed";
    case EventKind::fork_detected: return "fork_detected";
    case EventKind::live_evictions: return "live_evictions";
    case EventKind::lease_expired: return "lease_expired";
  }
  return "unknown";
}

bool is_warning(EventKind kind) {
  return kind == EventKind::store_failed || kind == EventKind::circuit_opened || kind == EventKind::live_evictions;
}

}  // namespace ratewarden
