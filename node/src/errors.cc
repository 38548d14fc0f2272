#include "errors.hpp"

namespace rwnode {

const char* error_code(ratewarden::ErrorCode code) noexcept {
  switch (code) {
    case ratewarden::ErrorCode::invalid_argument: return "ERR_RATEWARDEN_INVALID_ARGUMENT";
    case ratewarden::ErrorCode::store_unavailable: return "ERR_RATEWARDEN_STORE_UNAVAILABLE";
    case ratewarden::ErrorCode::store_timeout: return "ERR_RATEWARDEN_STORE_TIMEOUT";
    case ratewarden::ErrorCode::store_error: return "ERR_RATEWARDEN_STORE";
    case ratewarden::ErrorCode::internal: break;
  }
  return "ERR_RATEWARDEN_INTERNAL";
}

Napi::Error make_error(Napi::Env env, ratewarden::ErrorCode code, const std::string& message) {
  Napi::Error error = Napi::Error::New(env, message);
  error.Set("code", Napi::String::New(env, error_code(code)));
  return error;
}

void throw_invalid(Napi::Env env, const std::string& message) {
  throw make_error(env, ratewarden::ErrorCode::invalid_argument, message);
}

}  // namespace rwnode
