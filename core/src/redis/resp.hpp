// Building Redis commands in the RESP wire format (internal).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace ratewarden {

// Appends one command (an array of bulk strings) to a buffer. Arguments are binary safe.
class RespWriter {
 public:
  RespWriter(std::string& out, size_t argc) : out_(out) {
    out_ += '*';
    out_ += std::to_string(argc);
    out_ += "\r\n";
  }
  RespWriter& arg(std::string_view s) {
    out_ += '$';
    out_ += std::to_string(s.size());
    out_ += "\r\n";
    out_.append(s.data(), s.size());
    out_ += "\r\n";
    return *this;
  }
  RespWriter& arg(int64_t n) { return arg(std::string_view(std::to_string(n))); }

 private:
  std::string& out_;
};

}  // namespace ratewarden
