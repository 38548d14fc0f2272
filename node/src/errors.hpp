// JS errors from the core's: an Error whose `code` is ERR_RATEWARDEN_<what> (docs/node.md, "Errors").
#pragma once

#include <napi.h>

#include <string>

#include "ratewarden/errors.hpp"

namespace rwnode {

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

}  // namespace rwnode
