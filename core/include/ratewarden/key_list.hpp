// KeyList: a deny list or an allow list held in a store (docs/key-lists.md) — keys added for a duration, seen at
// once by every process of every runtime on the store. Python's and Node's KeyList and the C ABI's rw_key_list_*
// are this class: a list's name and duration make its entries, whichever runtime wrote them.
//
// An entry is the state of a one-hit fixed window of the duration for the key itself, under the list's own prefix
// "<store's prefix>:list:<name>": add resets and hits it (so again from now if it was there), remove resets it,
// contains peeks. The prefix keeps entries apart from every limiter's states (under the store's prefix, or one its
// code chose): a client that chooses a limiter's key can never name a list's entry.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "ratewarden/limiter.hpp"
#include "ratewarden/store.hpp"

namespace ratewarden {

class KeyList {
 public:
  static constexpr int64_t kMaxDurationUs = 3650LL * 86400 * 1000000;  // the longest period a policy takes

  // Throws InvalidArgument for a name that is not 1 to 64 letters, digits, '_', '.' or '-', a duration outside
  // 1 ms to 3650 days, or a store whose prefix leaves no room for the list's (at most 256 bytes).
  KeyList(std::string name, std::shared_ptr<Store> store, int64_t duration_us = kMaxDurationUs);

  const std::string& name() const { return name_; }
  const std::shared_ptr<Store>& store() const { return limiter_.store(); }
  int64_t duration_us() const { return duration_us_; }
  // Its entries' policy: one hit per duration, in whole ms ("1/900000ms"), or in whole seconds past the 10^9 that a
  // policy's period count may be.
  const std::string& policy() const { return policy_; }
  // Its entries' key prefix, "<store's prefix>:list:<name>": a binding's own limiter for the asynchronous forms
  // (the policy above, fixed window, this prefix, on the same store) calls the keys themselves.
  const std::string& prefix() const { return prefix_; }

  // Each throws what Limiter's calls throw: InvalidArgument for a bad key (a key is 1 to 4096 bytes, as a
  // limiter's), StoreError when the store fails.
  void add(std::string_view key);
  void remove(std::string_view key);
  bool contains(std::string_view key);
  int64_t expires_in_us(std::string_view key);  // 0 when the key is not in the list

 private:
  std::string name_;
  int64_t duration_us_;
  std::string policy_;
  std::string prefix_;
  Limiter limiter_;
};

}  // namespace ratewarden
