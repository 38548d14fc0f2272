// The calls every Redis store makes (single node or cluster): built on the caller's thread — the script call, DEL,
// PING — and handed to the store's client on the I/O thread (internal).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "client.hpp"
#include "ratewarden/clock.hpp"
#include "ratewarden/store.hpp"

namespace ratewarden {

class RedisCalls {
 public:
  // `by_slot`: a cluster, where each request carries the slot of its keys.
  RedisCalls(RedisClientHolder::Factory factory, std::string name, int64_t timeout_us, Clock clock, bool by_slot)
      : holder_(std::make_shared<RedisClientHolder>(std::move(factory), reject_request, name)),
        name_(std::move(name)),
        timeout_us_(timeout_us),
        clock_(std::move(clock)),
        by_slot_(by_slot) {}

  void decide(const StoreCall& call, DecisionCallback done);
  // Independent calls: one pipeline (per node), each with its own answer or error.
  void decide_many(const StoreCall* calls, size_t n, DecisionsCallback done);
  // DEL of the keys, then `tag` appended to the reset log of `prefix` (reset_log.hpp).
  void reset(const std::string* keys, size_t count, std::string_view tag, const std::string& prefix,
             DoneCallback done);
  void read_resets(const std::string& prefix, int64_t cursor, ResetLogCallback done);
  void check(DoneCallback done);  // PING (a cluster's: to the master of slot 0)
  void close() { holder_->close(); }

 private:
  // Shared with the callbacks that send a second request once the first is answered (reset).
  static void submit(RedisClientHolder& holder, std::unique_ptr<Exchange> exchange, int64_t timeout_us,
                     const std::string& name);
  void submit(std::unique_ptr<Exchange> exchange) { submit(*holder_, std::move(exchange), timeout_us_, name_); }

  std::shared_ptr<RedisClientHolder> holder_;
  const std::string name_;
  const int64_t timeout_us_;
  const Clock clock_;
  const bool by_slot_;
};

}  // namespace ratewarden
