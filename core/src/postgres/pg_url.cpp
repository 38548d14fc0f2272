#include "pg_url.hpp"

#include "libpq_api.hpp"
#include "net/network_url.hpp"
#include "pg_store.hpp"
#include "ratewarden/errors.hpp"

namespace ratewarden {
namespace {

// Schema and table names go into the schema's SQL as they are: lower-case identifiers only, short enough for the
// function names made from them ("<table>_decide") to fit PostgreSQL's 63 bytes.
std::string identifier(Url& url, std::string_view text, const std::string& option, const std::string& fallback) {
  auto it = url.query.find(option);
  if (it == url.query.end()) return fallback;
  const std::string value = it->second;
  url.query.erase(it);
  const bool ok = !value.empty() && value.size() <= 48 && (value[0] == '_' || (value[0] >= 'a' && value[0] <= 'z')) &&
                  value.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") == std::string::npos;
  if (!ok) invalid_url(text, option + " must be a lower-case identifier ([a-z_][a-z0-9_]*, at most 48 bytes)");
  return value;
}

}  // namespace

std::shared_ptr<Store> open_postgres_url(Url& url, std::string_view text, Clock clock) {
  PgOptions o;
  if (url.hosts.find(',') != std::string::npos) invalid_url(text, "postgres:// takes one host");
  std::string host;
  std::tie(host, o.port) = split_host_port(text, url.hosts, o.port);
  if (!host.empty()) o.host = host;
  if (auto it = url.query.find("host"); it != url.query.end()) {  // a Unix socket directory
    if (it->second.empty() || it->second[0] != '/') invalid_url(text, "?host= takes a Unix socket directory (an absolute path)");
    o.host = it->second;
    url.query.erase(it);
  }
  if (url.path.find('/') != std::string::npos) invalid_url(text, "expected /dbname after the host");
  o.dbname = url.path;
  o.user = url.user;
  o.password = url.password;
  o.has_password = url.has_password;
  o.schema = identifier(url, text, "schema", o.schema);
  o.table = identifier(url, text, "table", o.table);
  take_network_options(url, text, o);
  o.create = take_int(url, "create", 1, 0, 1) == 1;
  o.unlogged = take_int(url, "unlogged", 1, 0, 1) == 1;
  o.sweep_us = take_duration_us(url, "sweep", o.sweep_us);
  o.sweep_blocks = take_int(url, "sweep_blocks", o.sweep_blocks, 1, 1 << 20);
  o.clock = std::move(clock);
  reject_unknown_options(url, text);
  try {
    libpq();  // loaded here, not on the I/O thread: a missing libpq is an error at open
  } catch (const InvalidArgument& e) {
    throw InvalidArgument("store URL \"" + masked_url(text) + "\": " + e.what());
  }
  return std::make_shared<PostgresStore>(std::move(o));
}

}  // namespace ratewarden
