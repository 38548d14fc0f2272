// The connections of one server of a network store, and which one a request goes on (internal; I/O thread).
//
// The calls of one batch (routed one after the other) go on one connection, so that calls on one key are answered in
// the batch's order, as one caller's calls one after the other would be. Otherwise the least busy connection, round
// robin among equals: one slow reply does not hold up the others' callers. A pool that opens on demand (PostgreSQL)
// takes a connection not opened yet only when every open one has a call in flight: a process then opens as many
// connections as it has calls at once, up to the pool's size, and keeps none idle that its load never needed.
// Connection: in_flight(), fail_all(code, message), next_deadline_us(), expire(now_us); and opened() on demand.
#pragma once

#include <algorithm>
#include <climits>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ratewarden/errors.hpp"

namespace ratewarden {

template <typename Connection, bool kOnDemand>
class Pool {
 public:
  void add(std::unique_ptr<Connection> connection) { connections_.push_back(std::move(connection)); }

  // The connection for a request of `batch` (null: none).
  Connection& pick(const void* batch) {
    if (batch != nullptr && batch == batch_) return *batch_connection_;
    const size_t n = connections_.size();
    const size_t start = next_++ % n;
    Connection* best = nullptr;
    Connection* unopened = nullptr;
    for (size_t k = 0; k < n; ++k) {
      Connection* c = connections_[(start + k) % n].get();
      if constexpr (kOnDemand) {
        if (!c->opened()) {
          if (unopened == nullptr) unopened = c;
          continue;
        }
      }
      if (best == nullptr || c->in_flight() < best->in_flight()) best = c;
    }
    if (unopened != nullptr && (best == nullptr || best->in_flight() > 0)) best = unopened;
    batch_ = batch;
    batch_connection_ = best;
    return *best;
  }

  void fail_all(ErrorCode code, const std::string& message) {
    for (auto& c : connections_) c->fail_all(code, message);
  }
  int64_t next_deadline_us() const {
    int64_t next = INT64_MAX;
    for (const auto& c : connections_) next = std::min(next, c->next_deadline_us());
    return next;
  }
  void expire(int64_t now_us) {
    for (auto& c : connections_) c->expire(now_us);
  }

 private:
  std::vector<std::unique_ptr<Connection>> connections_;
  size_t next_ = 0;
  const void* batch_ = nullptr;             // the batch of the last request sent
  Connection* batch_connection_ = nullptr;  // and its connection
};

}  // namespace ratewarden
