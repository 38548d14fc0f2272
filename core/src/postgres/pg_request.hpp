// One statement on its way to PostgreSQL and back (internal). Built on the caller's thread, then owned by the I/O
// thread: its connection calls `done` exactly once there and deletes it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ratewarden/errors.hpp"

namespace ratewarden {

struct PgRequest {
  const char* statement = nullptr;  // a prepared statement's name (schema.hpp)
  std::vector<std::string> values;  // the parameters
  std::vector<bool> is_null;
  std::vector<int> formats;         // 0 text, 1 binary
  int64_t deadline_us = 0;          // monotonic: fails with a timeout if not answered by then
  const void* batch = nullptr;      // the calls of one hit_many (pg_client.cpp keeps them on one connection)

  std::vector<std::string> row;  // the first row's fields, as text
  ErrorCode error = ErrorCode::internal;
  std::string error_message;     // empty on success

  std::function<void(PgRequest&)> done;

  void param(std::string value, int format = 0) {
    values.push_back(std::move(value));
    is_null.push_back(false);
    formats.push_back(format);
  }
  void null_param() {
    values.emplace_back();
    is_null.push_back(true);
    formats.push_back(0);
  }
  bool failed() const { return !error_message.empty(); }
  void fail(ErrorCode code, std::string message) {
    error = code;
    error_message = std::move(message);
  }
};

// Calls request->done and deletes the request.
void finish_request(PgRequest* request);

}  // namespace ratewarden
