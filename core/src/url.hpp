// Store URLs: scheme://[user[:password]@]host:port[,host:port...][/path][?key=value&...] (internal).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ratewarden {

struct Url {
  std::string scheme;
  std::string user;
  std::string password;
  bool has_password = false;
  std::string hosts;  // as written: "host:port[,host:port...]"
  std::string path;   // without the leading '/'
  std::map<std::string, std::string> query;
};

// Throws InvalidArgument. Percent-escapes are decoded in user, password and query values. Messages quote the URL
// with its password masked.
Url parse_url(std::string_view text);

// The URL with the password replaced by "***": safe for messages and logs.
std::string masked_url(std::string_view text);

// Throws InvalidArgument: "invalid store URL "<text, masked>": <why>".
[[noreturn]] void invalid_url(std::string_view text, const std::string& why);

// "host", "host:port", "[::1]" or "[::1]:port" (of the URL `text`): the host ("" when none is written) and the port
// (`default_port` when none is written). Throws InvalidArgument for a malformed port or brackets.
std::pair<std::string, int> split_host_port(std::string_view text, const std::string& hostport, int default_port);

// Reads and removes query[name] as an integer in [min, max]; returns fallback when absent.
int64_t take_int(Url& url, const std::string& name, int64_t fallback, int64_t min, int64_t max);
// Reads and removes query[name] as a duration: "250ms", "2s", "1500us"; a bare number is milliseconds.
int64_t take_duration_us(Url& url, const std::string& name, int64_t fallback_us);
// Throws InvalidArgument naming any query option no one took.
void reject_unknown_options(const Url& url, std::string_view text);

}  // namespace ratewarden
