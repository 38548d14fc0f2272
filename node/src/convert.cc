#include "convert.hpp"

#include <cmath>

#include "errors.hpp"
#include "ratewarden/limiter.hpp"

namespace rwnode {

namespace {

// UTF-16 to UTF-8, a lone surrogate becoming U+FFFD (as V8's own conversion does). Reading the string as UTF-16 and
// encoding it here costs about half of V8's String::WriteUtf8 for the short ASCII keys that are the usual case. Their
// ASCII head is copied first by a loop of its own (one unit at a time: the units were just written by V8 one at a
// time, and reading several as one word stalls on those writes).
size_t encode_utf8(const char16_t* in, size_t n, char* out) {
  size_t i = 0;
  for (; i < n && in[i] < 0x80; ++i) out[i] = static_cast<char>(in[i]);
  char* o = out + i;
  for (; i < n; ++i) {
    uint32_t c = in[i];
    if (c < 0x80) {
      *o++ = static_cast<char>(c);
      continue;
    }
    if (c < 0x800) {
      *o++ = static_cast<char>(0xC0 | (c >> 6));
    } else {
      if (c >= 0xD800 && c <= 0xDFFF) {
        if (c <= 0xDBFF && i + 1 < n && in[i + 1] >= 0xDC00 && in[i + 1] <= 0xDFFF) {
          c = 0x10000 + ((c - 0xD800) << 10) + (in[++i] - 0xDC00);
          *o++ = static_cast<char>(0xF0 | (c >> 18));
          *o++ = static_cast<char>(0x80 | ((c >> 12) & 0x3F));
        } else {
          c = 0xFFFD;
          *o++ = static_cast<char>(0xE0 | (c >> 12));
        }
      } else {
        *o++ = static_cast<char>(0xE0 | (c >> 12));
      }
      *o++ = static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    }
    *o++ = static_cast<char>(0x80 | (c & 0x3F));
  }
  return static_cast<size_t>(o - out);
}

// A JS value as a message shows it: a string quoted, a BigInt with its n, a symbol by its kind, the rest as String()
// writes it (2^60 as 1152921504606846976, NaN, null, true, [object Object]).
std::string shown(napi_env env, napi_value value) {
  napi_valuetype kind = napi_undefined;
  napi_typeof(env, value, &kind);
  if (kind == napi_symbol) return "a symbol";
  const std::string text = Napi::Value(env, value).ToString().Utf8Value();
  if (kind == napi_string) return "\"" + text + "\"";
  return kind == napi_bigint ? text + "n" : text;
}

}  // namespace

KeyBuffer::KeyBuffer() : units_(ratewarden::kMaxKeyBytes + 1, u'\0'), bytes_(3 * units_.size(), '\0') {}

std::string_view KeyBuffer::read(napi_env env, napi_value value) {
  // Strings first, without a type check: the common case costs one N-API call. A key of more than 4096 UTF-16
  // units is over 4096 bytes: it is read whole only so that the core can report its true length.
  size_t len = 0;
  napi_status status = napi_get_value_string_utf16(env, value, units_.data(), units_.size() + 1, &len);
  if (status == napi_ok && len == units_.size()) {
    napi_get_value_string_utf16(env, value, nullptr, 0, &len);
    std::u16string all(len, u'\0');
    napi_get_value_string_utf16(env, value, all.data(), len + 1, &len);
    long_key_.resize(3 * len);
    return std::string_view(long_key_.data(), encode_utf8(all.data(), len, long_key_.data()));
  }
  if (status == napi_ok) return std::string_view(bytes_.data(), encode_utf8(units_.data(), len, bytes_.data()));
  bool typed = false;
  napi_typedarray_type type;
  void* data = nullptr;
  if (napi_is_typedarray(env, value, &typed) == napi_ok && typed &&
      napi_get_typedarray_info(env, value, &type, &len, &data, nullptr, nullptr) == napi_ok &&
      type == napi_uint8_array)
    return std::string_view(static_cast<const char*>(data), len);
  napi_valuetype kind = napi_undefined;
  napi_typeof(env, value, &kind);
  static const char* const names[] = {"undefined", "null",   "boolean",  "number", "string",
                                      "symbol",    "object", "function", "external", "bigint"};
  throw_invalid(Napi::Env(env), std::string("key must be a string or a Buffer, got ") +
                                    (kind >= 0 && kind <= napi_bigint ? names[kind] : "something else"));
}

int64_t integer_value(napi_env env, napi_value value, const char* name) {
  const auto refuse = [&](const char* why) {
    throw_invalid(Napi::Env(env), std::string(name) + why + ", got " + shown(env, value));
  };
  double d = 0;
  if (napi_get_value_double(env, value, &d) != napi_ok || !std::isfinite(d) || std::floor(d) != d)
    refuse(" must be an integer");
  // Every integral double of magnitude below 2^63 is an int64 exactly, and the core's message then names the number
  // JS shows for it. None beyond is: refused here, in the words of the Python binding.
  if (d >= kInt64Bound || d < -kInt64Bound) refuse(" is out of range (it does not fit in 64 bits)");
  return static_cast<int64_t>(d);
}

void write_decision(const ratewarden::Decision& d, double* out) {
  out[0] = d.allowed ? 1 : 0;
  out[1] = static_cast<double>(d.limit);
  out[2] = static_cast<double>(d.remaining);
  out[3] = static_cast<double>(d.reset_after_us);
  out[4] = static_cast<double>(d.retry_after_us);
  out[5] = static_cast<double>(d.used);
  out[6] = static_cast<double>(d.policy_index);
  out[7] = static_cast<double>(d.wait_us);
  out[8] = static_cast<double>(d.ticket);  // an instant in µs: below 2^53, exact as a double
}

}  // namespace rwnode
