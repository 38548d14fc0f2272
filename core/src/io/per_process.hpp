// One object per process (internal): made on first use, and made again in a forked child, which never touches what
// the parent's holds — its threads are gone, its locks may be held, the fork handler closed its descriptors — but
// keeps it reachable, unused (abandon), for leak checkers. The I/O loop, the callback thread, a network store's
// client and the hybrid store's knowledge are each one of these.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>

#include "io/fork_guard.hpp"

namespace ratewarden {

// Keeps what a forked child inherited and must never touch reachable (for leak checkers), never used.
void abandon(void* inherited);

template <typename T>
class PerProcess {
 public:
  PerProcess() = default;
  PerProcess(const PerProcess&) = delete;
  PerProcess& operator=(const PerProcess&) = delete;
  // Deletes this process's object; a parent's is abandoned.
  ~PerProcess() {
    Slot* s = slot_.load(std::memory_order_acquire);
    if (s == nullptr) return;
    if (s->generation != fork_generation()) {
      abandon(s);
      return;
    }
    delete s->value;
    delete s;
  }

  // This process's object, made by `make()` (which returns a new T*) when there is none yet: once per process, even
  // when threads race. One relaxed load of the fork generation and one of the slot once it exists.
  template <typename Make>
  T& get(Make&& make) {
    Slot* s = slot_.load(std::memory_order_acquire);
    if (s != nullptr && s->generation == fork_generation()) return *s->value;
    return make_here(make);
  }

  // This process's object, or null when none was made here.
  T* mine() const {
    Slot* s = slot_.load(std::memory_order_acquire);
    return s != nullptr && s->generation == fork_generation() ? s->value : nullptr;
  }

  // Hands this process's object over to the caller (null when none was made here), leaving none. The caller makes
  // sure no thread is in get() (the owner is going).
  T* release() {
    Slot* s = slot_.load(std::memory_order_acquire);
    if (s == nullptr || s->generation != fork_generation()) return nullptr;
    T* value = s->value;
    slot_.store(nullptr, std::memory_order_release);
    delete s;
    return value;
  }

 private:
  struct Slot {
    uint64_t generation;
    T* value;
  };

  template <typename Make>
  T& make_here(Make& make) {
    static ForkSafeMutex* mu = new ForkSafeMutex;  // one per type; lives forever, as every ForkSafeMutex must
    std::lock_guard<ForkSafeMutex> lock(*mu);
    const uint64_t generation = fork_generation();
    Slot* s = slot_.load(std::memory_order_acquire);
    if (s != nullptr && s->generation == generation) return *s->value;
    if (s != nullptr) abandon(s);  // the parent's
    auto* fresh = new Slot{generation, make()};
    slot_.store(fresh, std::memory_order_release);
    return *fresh->value;
  }

  std::atomic<Slot*> slot_{nullptr};
};

}  // namespace ratewarden
