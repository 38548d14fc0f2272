// redis://[user[:password]@]host[:port][/db][?timeout=..&connect_timeout=..&pool=..]
#include <cctype>

#include "ratewarden/errors.hpp"
#include "redis_url.hpp"

namespace ratewarden {
namespace {

[[noreturn]] void bad(std::string_view text, const std::string& why) {
  throw InvalidArgument("invalid store URL \"" + masked_url(text) + "\": " + why);
}

int parse_port(std::string_view text, const std::string& port) {
  if (port.empty() || port.size() > 5) bad(text, "expected a port number after ':'");
  int n = 0;
  for (char c : port) {
    if (!std::isdigit(static_cast<unsigned char>(c))) bad(text, "expected a port number after ':'");
    n = n * 10 + (c - '0');
  }
  if (n < 1 || n > 65535) bad(text, "the port must be between 1 and 65535");
  return n;
}

}  // namespace

RedisStoreOptions redis_options_from_url(Url& url, std::string_view text) {
  RedisStoreOptions o;
  o.user = url.user;
  if (url.has_password) o.password = url.password;
  std::string hostport = url.hosts;
  if (hostport.find(',') != std::string::npos) bad(text, "redis:// takes one host");
  if (!hostport.empty() && hostport[0] == '[') {  // [::1]:6379
    size_t close = hostport.find(']');
    if (close == std::string::npos) bad(text, "unclosed '[' in the host");
    o.host = hostport.substr(1, close - 1);
    if (close + 1 < hostport.size()) {
      if (hostport[close + 1] != ':') bad(text, "expected ':' after ']'");
      o.port = parse_port(text, hostport.substr(close + 2));
    }
  } else {
    size_t colon = hostport.rfind(':');
    o.host = hostport.substr(0, colon);
    if (colon != std::string::npos) o.port = parse_port(text, hostport.substr(colon + 1));
  }
  if (o.host.empty()) bad(text, "expected a host, such as redis://127.0.0.1:6379");
  if (!url.path.empty()) {
    if (url.path.size() > 5 || url.path.find_first_not_of("0123456789") != std::string::npos)
      bad(text, "the path must be a database number, such as /0");
    o.db = std::stoi(url.path);
  }
  o.timeout_us = take_duration_us(url, "timeout", o.timeout_us);
  o.connect_timeout_us = take_duration_us(url, "connect_timeout", o.connect_timeout_us);
  o.pool = static_cast<int>(take_int(url, "pool", o.pool, 1, 64));
  return o;
}

}  // namespace ratewarden
