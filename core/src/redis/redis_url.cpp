// redis://[user[:password]@]host[:port][/db][?options] and redis+cluster://[user[:password]@]host:port[,...][?options]
#include "redis_url.hpp"

#include <cctype>

#include "ratewarden/errors.hpp"

namespace ratewarden {
namespace {

constexpr int kDefaultPort = 6379;

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

// "host", "host:port", "[::1]" or "[::1]:port".
std::pair<std::string, int> parse_host(std::string_view text, const std::string& hostport) {
  std::string host;
  int port = kDefaultPort;
  if (!hostport.empty() && hostport[0] == '[') {
    size_t close = hostport.find(']');
    if (close == std::string::npos) bad(text, "unclosed '[' in the host");
    host = hostport.substr(1, close - 1);
    if (close + 1 < hostport.size()) {
      if (hostport[close + 1] != ':') bad(text, "expected ':' after ']'");
      port = parse_port(text, hostport.substr(close + 2));
    }
  } else {
    size_t colon = hostport.rfind(':');
    host = hostport.substr(0, colon);
    if (colon != std::string::npos) port = parse_port(text, hostport.substr(colon + 1));
  }
  if (host.empty()) bad(text, "expected a host, such as 127.0.0.1:6379");
  return {host, port};
}

void read_client_options(Url& url, RedisClientOptions& o) {
  o.user = url.user;
  if (url.has_password) o.password = url.password;
  o.timeout_us = take_duration_us(url, "timeout", o.timeout_us);
  o.connect_timeout_us = take_duration_us(url, "connect_timeout", o.connect_timeout_us);
  o.pool = static_cast<int>(take_int(url, "pool", o.pool, 1, 64));
}

}  // namespace

RedisStoreOptions redis_options_from_url(Url& url, std::string_view text) {
  RedisStoreOptions o;
  read_client_options(url, o);
  if (url.hosts.find(',') != std::string::npos) bad(text, "redis:// takes one host; redis+cluster:// takes several");
  std::tie(o.host, o.port) = parse_host(text, url.hosts);
  if (!url.path.empty()) {
    if (url.path.size() > 5 || url.path.find_first_not_of("0123456789") != std::string::npos)
      bad(text, "the path must be a database number, such as /0");
    o.db = std::stoi(url.path);
  }
  return o;
}

ClusterStoreOptions cluster_options_from_url(Url& url, std::string_view text) {
  ClusterStoreOptions o;
  read_client_options(url, o);
  if (!url.path.empty()) bad(text, "a cluster has only database 0: no path");
  size_t start = 0;
  while (start <= url.hosts.size()) {
    size_t comma = url.hosts.find(',', start);
    const std::string item = url.hosts.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    o.seeds.push_back(parse_host(text, item));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return o;
}

}  // namespace ratewarden
