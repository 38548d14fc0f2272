// Arguments from JS and decisions back to JS.
#pragma once

#include <napi.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "ratewarden/decision.hpp"

namespace rwnode {

// The bytes of a key given as a string (UTF-8) or a Buffer / Uint8Array (as is). A string key is copied into
// `scratch`; a Buffer key is viewed in place, valid while the JS value is. The core checks the length.
std::string_view key_bytes(const Napi::Value& value, std::string& scratch);
std::string_view key_bytes(napi_env env, napi_value value, std::string& scratch);

// An integer Number, such as a cost: NaN, Infinity and fractions are invalid here (named `name` in the message);
// the range is checked by the core.
int64_t integer_value(napi_env env, napi_value value, const char* name = "cost");
inline int64_t integer_value(const Napi::Value& value, const char* name = "cost") {
  return integer_value(value.Env(), value, name);
}

// A decision as the numbers JS reads back (node/lib/decision.js): allowed (0/1), limit, remaining, reset_after_us,
// retry_after_us, used, policy_index.
inline constexpr size_t kDecisionFields = 7;
void write_decision(const ratewarden::Decision& d, double* out);

}  // namespace rwnode
