#include "redis_url.hpp"

#include <string>
#include <vector>

#include "ratewarden/cluster_store.hpp"
#include "ratewarden/errors.hpp"
#include "net/network_url.hpp"
#include "ratewarden/redis_store.hpp"
#include "ratewarden/sentinel_store.hpp"

namespace ratewarden {
namespace {

constexpr int kDefaultPort = 6379;

// "host", "host:port", "[::1]" or "[::1]:port".
std::pair<std::string, int> parse_host(std::string_view text, const std::string& hostport) {
  auto host_port = split_host_port(text, hostport, kDefaultPort);
  if (host_port.first.empty()) invalid_url(text, "expected a host, such as 127.0.0.1:6379");
  return host_port;
}

std::string take_string(Url& url, const std::string& name) {
  auto it = url.query.find(name);
  if (it == url.query.end()) return "";
  std::string value = it->second;
  url.query.erase(it);
  return value;
}

void read_client_options(Url& url, std::string_view text, bool tls, RedisClientOptions& o) {
  o.user = url.user;
  if (url.has_password) o.password = url.password;
  take_network_options(url, text, o);
  o.tls.enabled = tls;
  for (const char* name : {"tls_ca", "tls_cert", "tls_key", "tls_sni", "tls_verify"})
    if (!tls && url.query.count(name) != 0) invalid_url(text, std::string(name) + " needs TLS: use rediss://");
  if (!tls) return;
  o.tls.ca_file = take_string(url, "tls_ca");
  o.tls.cert_file = take_string(url, "tls_cert");
  o.tls.key_file = take_string(url, "tls_key");
  o.tls.sni = take_string(url, "tls_sni");
  o.tls.verify = take_int(url, "tls_verify", 1, 0, 1) == 1;
}

// "a,b,,c" -> {"a", "b", "", "c"}: an empty item is kept, for its reader to refuse.
std::vector<std::string> split_commas(const std::string& list) {
  std::vector<std::string> items;
  size_t start = 0;
  for (size_t comma; (comma = list.find(',', start)) != std::string::npos; start = comma + 1)
    items.push_back(list.substr(start, comma - start));
  items.push_back(list.substr(start));
  return items;
}

int parse_db(std::string_view text, const std::string& db) {
  if (db.empty() || db.size() > 5 || db.find_first_not_of("0123456789") != std::string::npos)
    invalid_url(text, "the database must be a number, such as /0");
  return std::stoi(db);
}

}  // namespace

std::shared_ptr<Store> open_redis_url(Url& url, std::string_view text, Clock clock) {
  RedisStoreOptions o;
  read_client_options(url, text, url.scheme == "rediss", o);
  if (url.scheme == "redis+unix") {
    if (!url.hosts.empty() || url.path.empty())
      invalid_url(text, "expected redis+unix:///path/to/redis.sock (three slashes: no host)");
    o.unix_path = "/" + url.path;
    const std::string db = take_string(url, "db");
    if (!db.empty()) o.db = parse_db(text, db);
  } else {
    if (url.hosts.find(',') != std::string::npos)
      invalid_url(text, "redis:// takes one host; redis+cluster:// takes several");
    std::tie(o.host, o.port) = parse_host(text, url.hosts);
    if (!url.path.empty()) o.db = parse_db(text, url.path);
  }
  o.clock = std::move(clock);
  reject_unknown_options(url, text);
  return std::make_shared<RedisStore>(o);
}

std::shared_ptr<Store> open_cluster_url(Url& url, std::string_view text, Clock clock) {
  ClusterStoreOptions o;
  read_client_options(url, text, url.scheme == "rediss+cluster", o);
  if (url.scheme == "redis+cluster+unix") {
    if (!url.hosts.empty() || url.path.empty())
      invalid_url(text, "expected redis+cluster+unix:///path/a.sock,/path/b.sock,... (three slashes: no host)");
    for (const std::string& path : split_commas("/" + url.path)) {
      if (path.empty() || path[0] != '/') invalid_url(text, "every socket must be an absolute path");
      o.unix_paths.push_back(path);
    }
  } else {
    if (!url.path.empty()) invalid_url(text, "a cluster has only database 0: no path");
    for (const std::string& item : split_commas(url.hosts)) o.seeds.push_back(parse_host(text, item));
  }
  o.clock = std::move(clock);
  reject_unknown_options(url, text);
  return std::make_shared<ClusterStore>(o);
}

std::shared_ptr<Store> open_sentinel_url(Url& url, std::string_view text, Clock clock) {
  SentinelStoreOptions o;
  read_client_options(url, text, url.scheme == "rediss+sentinel", o);
  if (url.hosts.empty()) invalid_url(text, "expected the sentinels, such as redis+sentinel://127.0.0.1:26379/mymaster");
  for (const std::string& item : split_commas(url.hosts)) {
    auto host_port = split_host_port(text, item, 26379);
    if (host_port.first.empty()) invalid_url(text, "expected a sentinel host:port in the list, got \"" + item + "\"");
    o.sentinels.push_back(host_port);
  }
  if (url.path.empty() || url.path.find('/') != std::string::npos)
    invalid_url(text, "expected the service name after the sentinels, such as /mymaster (SENTINEL "
                      "get-master-addr-by-name takes it)");
  o.service = url.path;
  const std::string db = take_string(url, "db");
  if (!db.empty()) o.db = parse_db(text, db);
  const std::string auth = take_string(url, "sentinel_auth");
  if (auth == "none")
    o.sentinel_auth = false;
  else if (!auth.empty() && auth != "url")
    invalid_url(text, "sentinel_auth must be url (the sentinels get the URL's user and password) or none");
  o.clock = std::move(clock);
  reject_unknown_options(url, text);
  return std::make_shared<SentinelStore>(o);
}

}  // namespace ratewarden
