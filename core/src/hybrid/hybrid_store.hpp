// The hybrid modes of a shared store, ?mode=local_first and ?mode=async (internal; docs/hybrid.md): a store that
// wraps the shared one and answers in-process what the process already knows.
//  - local_first: a call that the store's last denial proves would be denied is denied here; every other call goes
//    to the store. Never admits more than the store would.
//  - async: hits are also admitted here, from leases: cost the process has already charged to the store in small
//    chunks, topped up in the background every `sync`.
// Both read the store's reset log every `sync`, and use what they know only while that log has been read recently.
#pragma once

#include <cstdint>
#include <memory>

#include "ratewarden/clock.hpp"
#include "ratewarden/store.hpp"

namespace ratewarden {

enum class HybridMode { local_first, async };

struct HybridOptions {
  HybridMode mode = HybridMode::local_first;
  int64_t sync_us = 10000;       // how often the reset log is read (and, in async, leases topped up)
  int64_t max_keys = 100000;     // the bound on what is remembered (one entry per limiter and user key)
  int64_t lease_per_mille = 10;  // async: a lease is at most this share of the smallest capacity (at least 1)
  Clock clock;                   // tests: the store's clock (the one its scripts are given)
};

// Throws InvalidArgument when `inner` is not a shared store that logs its resets.
std::shared_ptr<Store> make_hybrid_store(std::shared_ptr<Store> inner, HybridOptions options);

}  // namespace ratewarden
