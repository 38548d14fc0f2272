#include "client_options.hpp"

#include "net/network_url.hpp"
#include "tls.hpp"

namespace ratewarden {

std::shared_ptr<TlsContext> make_tls(const RedisClientOptions& options) {
  if (!options.tls.enabled) return nullptr;
  TlsOptions t;
  t.ca_file = options.tls.ca_file;
  t.cert_file = options.tls.cert_file;
  t.key_file = options.tls.key_file;
  t.sni = options.tls.sni;
  t.verify = options.tls.verify;
  return std::make_shared<TlsContext>(t);
}

RedisEndpoint make_endpoint(const RedisClientOptions& options, std::shared_ptr<TlsContext> tls, std::string host,
                            int port, std::string name) {
  RedisEndpoint e;
  e.host = std::move(host);
  e.port = port;
  e.user = options.user;
  e.password = options.password;
  e.connect_timeout_us = options.connect_timeout_us;
  e.timeout_us = options.timeout_us;
  e.tls = std::move(tls);
  e.tls_sni = options.tls.sni;
  e.name = std::move(name);
  return e;
}

std::string describe_auth(const RedisClientOptions& options) {
  if (options.user.empty() && !options.password) return "";
  return options.user + (options.password ? ":***" : "") + "@";
}

std::string describe_query(const RedisClientOptions& options) {
  std::string q = "?" + describe_network_options(options);
  if (!options.tls.ca_file.empty()) q += "&tls_ca=" + options.tls.ca_file;
  if (!options.tls.cert_file.empty()) q += "&tls_cert=" + options.tls.cert_file;
  if (!options.tls.sni.empty()) q += "&tls_sni=" + options.tls.sni;
  if (options.tls.enabled && !options.tls.verify) q += "&tls_verify=0";
  return q;
}

std::string describe_host(const std::string& host, int port) {
  return (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

}  // namespace ratewarden
