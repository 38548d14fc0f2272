#include "convert.hpp"

#include <cmath>

#include "errors.hpp"
#include "ratewarden/limiter.hpp"

namespace rwnode {

std::string_view key_bytes(napi_env env, napi_value value, std::string& scratch) {
  // Strings first, without a type check: the common case costs one N-API call. One call for keys that fit the
  // usual size; a second, exact one for longer keys (the core then reports the true length).
  scratch.resize(ratewarden::kMaxKeyBytes + 1);
  size_t len = 0;
  napi_status status = napi_get_value_string_utf8(env, value, scratch.data(), scratch.size() + 1, &len);
  if (status == napi_ok && len == scratch.size()) {
    napi_get_value_string_utf8(env, value, nullptr, 0, &len);
    std::string long_key(len, '\0');
    status = napi_get_value_string_utf8(env, value, long_key.data(), len + 1, &len);
    scratch.swap(long_key);
  }
  if (status == napi_ok) return std::string_view(scratch.data(), len);
  bool typed = false;
  napi_typedarray_type type;
  void* data = nullptr;
  if (napi_is_typedarray(env, value, &typed) == napi_ok && typed &&
      napi_get_typedarray_info(env, value, &type, &len, &data, nullptr, nullptr) == napi_ok &&
      type == napi_uint8_array)
    return std::string_view(static_cast<const char*>(data), len);
  throw_invalid(Napi::Env(env), "key must be a string or a Buffer");
}

std::string_view key_bytes(const Napi::Value& value, std::string& scratch) {
  return key_bytes(value.Env(), value, scratch);
}

int64_t cost_value(napi_env env, napi_value value) {
  double d = 0;
  if (napi_get_value_double(env, value, &d) != napi_ok) throw_invalid(Napi::Env(env), "cost must be an integer");
  if (!std::isfinite(d) || std::floor(d) != d)
    throw_invalid(Napi::Env(env), "cost must be an integer, got " + Napi::Value(env, value).ToString().Utf8Value());
  // Beyond 2^53 a double is not an exact integer; any such cost is far above every capacity anyway.
  constexpr double kExact = 9007199254740992.0;
  return static_cast<int64_t>(std::fmax(-kExact, std::fmin(kExact, d)));
}

int64_t cost_value(const Napi::Value& value) { return cost_value(value.Env(), value); }

void write_decision(const ratewarden::Decision& d, double* out) {
  out[0] = d.allowed ? 1 : 0;
  out[1] = static_cast<double>(d.limit);
  out[2] = static_cast<double>(d.remaining);
  out[3] = static_cast<double>(d.reset_after_us);
  out[4] = static_cast<double>(d.retry_after_us);
  out[5] = static_cast<double>(d.used);
}

}  // namespace rwnode
