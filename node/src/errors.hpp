// JS errors from the core's: an Error whose `code` is ERR_RATEWARDEN_<what> (docs/node.md, "Errors").
#pragma once

#include <napi.h>

#include <string>

#include "ratewarden/errors.hpp"

namespace rwnode {

// "ERR_RATEWARDEN_INVALID_ARGUMENT", ...
const char* error_code(ratewarden::ErrorCode code) noexcept;

Napi::Error make_error(Napi::Env env, ratewarden::ErrorCode code, const std::string& message);

// Throws an ERR_RATEWARDEN_INVALID_ARGUMENT error into JS.
[[noreturn]] void throw_invalid(Napi::Env env, const std::string& message);

// Runs `f`, turning any C++ exception into a JS Error with a code: nothing from the core reaches JS uncaught.
template <class F>
auto guarded(Napi::Env env, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const Napi::Error&) {
    throw;
  } catch (const ratewarden::Error& e) {
    throw make_error(env, e.code(), e.what());
  } catch (const std::exception& e) {
    throw make_error(env, ratewarden::ErrorCode::internal, e.what());
  }
}

// For functions registered with the C API (no node-addon-api wrapper around them): runs `f`, and turns whatever it
// throws into a pending JS exception, checking statuses instead of throwing again. Nothing escapes: an exception
// out of a callback that Node calls is std::terminate.
template <class F>
napi_value js_callback(napi_env env, F&& f) noexcept {
  try {
    return f();
  } catch (const Napi::Error& e) {
    try {
      napi_throw(env, e.Value());
    } catch (...) {
    }
  } catch (const ratewarden::Error& e) {
    napi_throw_error(env, error_code(e.code()), e.what());
  } catch (const std::exception& e) {
    napi_throw_error(env, error_code(ratewarden::ErrorCode::internal), e.what());
  } catch (...) {
    napi_throw_error(env, error_code(ratewarden::ErrorCode::internal), "unknown error");
  }
  return nullptr;
}

}  // namespace rwnode
