#include "ratewarden/errors.hpp"

namespace ratewarden {

const char* error_code_name(ErrorCode code) noexcept {
  switch (code) {
    case ErrorCode::invalid_argument: return "invalid_argument";
    case ErrorCode::store_unavailable: return "store_unavailable";
    case ErrorCode::store_timeout: return "store_timeout";
    case ErrorCode::store_error: return "store_error";
    case ErrorCode::internal: return "internal";
  }
  return "unknown";
}

std::string error_message(std::string message) {
  for (size_t at = message.find('\0'); at != std::string::npos; at = message.find('\0', at + 2))
    message.replace(at, 1, "\\0");
  return message;
}

}  // namespace ratewarden
