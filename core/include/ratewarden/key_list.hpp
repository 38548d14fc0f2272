// KeyList: a deny list or an allow list held in a store (docs/key-lists.md) — keys added for a duration, seen at
// once by every process of every runtime on the store. Python's and Node's KeyList and the C ABI's rw_key_list_*
// are this class: a list's name and duration make its entries, whichever runtime wrote them.
//
// An entry is the state of a one-hit fixed window of the duration under the store's key prefix, for the user key
// "list:<name>:<key>": add resets and hits it (so again from now if it was there), remove resets it, contains peeks.
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

  // Throws InvalidArgument for a name that is not 1 to 64 letters, digits, '_', '.' or '-', or a duration outside
  // 1 ms to 3650 days.
  KeyList(std::string name, std::shared_ptr<Store> store, int64_t duration_us = kMaxDurationUs);

  const std::string& name() const { return name_; }
  const std::shared_ptr<Store>& store() const { return limiter_.store(); }
  int64_t duration_us() const { return duration_us_; }
  // Its entries' policy: one hit per duration, in whole ms ("1/900000ms"), or in whole seconds past the 10^9 that a
  // policy's period count may be.
  const std::string& policy() const { return policy_; }
  // The user key of `key`'s entry, "list:<name>:<key>": what a binding's own limiter (the policy above, fixed
  // window, on the same store) calls for the asynchronous forms.
  std::string entry_key(std::string_view key) const;

  // Each throws what Limiter's calls throw: InvalidArgument for a bad key, StoreError when the store fails.
  void add(std::string_view key);
  void remove(std::string_view key);
  bool contains(std::string_view key);
  int64_t expires_in_us(std::string_view key);  // 0 when the key is not in the list

 private:
  std::string name_;
  int64_t duration_us_;
  std::string policy_;
  Limiter limiter_;
};

}  // namespace ratewarden
