// Arguments from JS and decisions back to JS.
#pragma once

#include <napi.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "ratewarden/decision.hpp"

namespace rwnode {

// Reads keys: the bytes of a key given as a string (as UTF-8) or a Buffer / Uint8Array (as is). A string key is
// converted into this buffer's space, reused by the next read (no allocation for keys up to the core's 4096 bytes);
// a Buffer key is viewed in place, valid while the JS value is. The core checks the length. One per environment
// (AddonData): reads happen on its loop thread, one call at a time.
class KeyBuffer {
 public:
  KeyBuffer();
  std::string_view read(napi_env env, napi_value value);
  std::string_view read(const Napi::Value& value) { return read(value.Env(), value); }

 private:
  std::u16string units_;  // kMaxKeyBytes + 1 units: a string that fills them is over the limit
  std::string bytes_;     // their UTF-8: at most 3 bytes per unit
  std::string long_key_;  // a key over the limit, read whole for the core's message
};

// An integer Number, such as a cost: NaN, Infinity, fractions and integers no int64 holds (from 2^63 up, below -2^63)
// are invalid here (named `name` in the message); the range is checked by the core.
int64_t integer_value(napi_env env, napi_value value, const char* name = "cost");
// 2^63: the int64s are the integers of [-2^63, 2^63), both ends exactly doubles.
inline constexpr double kInt64Bound = 9223372036854775808.0;
inline int64_t integer_value(const Napi::Value& value, const char* name = "cost") {
  return integer_value(value.Env(), value, name);
}

// A decision as the numbers JS reads back (node/lib/decision.js): allowed (0/1), limit, remaining, reset_after_us,
// retry_after_us, used, policy_index, and a reservation's wait_us and ticket.
inline constexpr size_t kDecisionFields = 9;
void write_decision(const ratewarden::Decision& d, double* out);

}  // namespace rwnode
