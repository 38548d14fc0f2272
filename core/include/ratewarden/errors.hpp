// Exceptions thrown by the C++ API. Every error carries a code that the C ABI and the bindings map 1:1.
#pragma once

#include <stdexcept>
#include <string>

namespace ratewarden {

enum class ErrorCode {
  invalid_argument = 1,  // bad policy string, cost, key, URL or option
  store_unavailable,     // connection refused, closed, or not (yet) established
  store_timeout,         // the store did not answer within the configured timeout
  store_error,           // the store answered with an error (protocol, OOM, READONLY, script error)
  internal,              // a bug in ratewarden
};

const char* error_code_name(ErrorCode code) noexcept;
// `message` with each NUL byte written as \0: what() is a C string, and a message quoting the caller's input (a
// policy string, a URL, a name) would end at its first NUL in every binding and in the C ABI.
std::string error_message(std::string message);

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message) : std::runtime_error(error_message(message)), code_(code) {}
  ErrorCode code() const noexcept { return code_; }

 private:
  ErrorCode code_;
};

class InvalidArgument : public Error {
 public:
  explicit InvalidArgument(const std::string& message) : Error(ErrorCode::invalid_argument, message) {}
};

// A store failure: the call has no decision. Limiter::on_store_error decides what the caller gets.
class StoreError : public Error {
 public:
  StoreError(ErrorCode code, const std::string& message) : Error(code, message) {}
};

}  // namespace ratewarden
