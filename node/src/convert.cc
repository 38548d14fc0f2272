#include "convert.hpp"

#include <cmath>

#include "errors.hpp"
#include "ratewarden/limiter.hpp"

namespace rwnode {

std::string_view key_bytes(const Napi::Value& value, std::string& scratch) {
  if (value.IsString()) {
    napi_env env = value.Env();
    // One call for keys that fit the usual size; a second, exact one for longer keys (the core then reports the
    // true length).
    scratch.resize(ratewarden::kMaxKeyBytes + 1);
    size_t len = 0;
    napi_status status = napi_get_value_string_utf8(env, value, scratch.data(), scratch.size() + 1, &len);
    if (status == napi_ok && len == scratch.size()) {
      napi_get_value_string_utf8(env, value, nullptr, 0, &len);
      scratch.resize(len);
      status = napi_get_value_string_utf8(env, value, scratch.data(), len + 1, &len);
    }
    NAPI_THROW_IF_FAILED(env, status, std::string_view());
    return std::string_view(scratch.data(), len);
  }
  if (value.IsTypedArray()) {
    Napi::TypedArray array = value.As<Napi::TypedArray>();
    if (array.TypedArrayType() == napi_uint8_array) {
      Napi::Uint8Array bytes = array.As<Napi::Uint8Array>();
      return std::string_view(reinterpret_cast<const char*>(bytes.Data()), bytes.ByteLength());
    }
  }
  throw_invalid(value.Env(), "key must be a string or a Buffer");
}

int64_t cost_value(const Napi::Value& value) {
  if (!value.IsNumber()) throw_invalid(value.Env(), "cost must be an integer");
  const double d = value.As<Napi::Number>().DoubleValue();
  if (!std::isfinite(d) || std::floor(d) != d)
    throw_invalid(value.Env(), "cost must be an integer, got " + value.ToString().Utf8Value());
  // Beyond 2^53 a double is not an exact integer; any such cost is far above every capacity anyway.
  constexpr double kExact = 9007199254740992.0;
  return static_cast<int64_t>(std::fmax(-kExact, std::fmin(kExact, d)));
}

void write_decision(const ratewarden::Decision& d, double* out) {
  out[0] = d.allowed ? 1 : 0;
  out[1] = static_cast<double>(d.limit);
  out[2] = static_cast<double>(d.remaining);
  out[3] = static_cast<double>(d.reset_after_us);
  out[4] = static_cast<double>(d.retry_after_us);
  out[5] = static_cast<double>(d.used);
}

}  // namespace rwnode
