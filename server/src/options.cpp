#include "options.hpp"

#include <cstdlib>
#include <functional>
#include <map>

#include "ratewarden/errors.hpp"

namespace ratewarden::server {
namespace {

int64_t whole(const std::string& name, const std::string& value, int64_t min, int64_t max) {
  char* end = nullptr;
  const long long v = std::strtoll(value.c_str(), &end, 10);
  if (value.empty() || *end != '\0' || v < min || v > max)
    throw InvalidArgument(name + " takes a whole number from " + std::to_string(min) + " to " + std::to_string(max) +
                          ", got \"" + value + "\"");
  return v;
}

ServiceOptions::Headers header_style(const std::string& name, const std::string& value) {
  if (value == "envoy" || value == "1") return ServiceOptions::Headers::envoy;
  if (value == "ietf") return ServiceOptions::Headers::ietf;
  if (value == "off" || value == "0") return ServiceOptions::Headers::off;
  throw InvalidArgument(name + " takes envoy, ietf or off, got \"" + value + "\"");
}

}  // namespace

const char* const kUsage =
    "usage: ratewarden-server [--config DIR] [--store URL] [--grpc-listen ADDR:PORT] [--http-listen ADDR:PORT] ...\n"
    "  --config DIR              envoyproxy/ratelimit YAML files, one domain each (RATEWARDEN_CONFIG; /etc/ratewarden)\n"
    "  --store URL               any ratewarden store URL (RATEWARDEN_STORE; memory://)\n"
    "  --grpc-listen ADDR:PORT   Envoy's RLS v3 and gRPC health (RATEWARDEN_GRPC_LISTEN; 0.0.0.0:8081; port 0: any)\n"
    "  --http-listen ADDR:PORT   /json, /healthcheck, /metrics (RATEWARDEN_HTTP_LISTEN; 0.0.0.0:8080; off: none)\n"
    "  --metrics-listen ADDR:PORT  /metrics and /healthcheck on a plaintext listener of their own; /metrics then\n"
    "                            leaves --http-listen (RATEWARDEN_METRICS_LISTEN; none)\n"
    "  --tls-cert FILE           TLS on the gRPC and HTTP listeners: the server's PEM certificate chain\n"
    "                            (RATEWARDEN_TLS_CERT; with --tls-key)\n"
    "  --tls-key FILE            its PEM private key (RATEWARDEN_TLS_KEY)\n"
    "  --tls-client-ca FILE      mutual TLS: clients must present a certificate this PEM CA signed\n"
    "                            (RATEWARDEN_TLS_CLIENT_CA)\n"
    "  --tls-refresh-s N         how often the three files are re-read (RATEWARDEN_TLS_REFRESH_S; 60)\n"
    "  --max-descriptors N       per request (RATEWARDEN_MAX_DESCRIPTORS; 64)\n"
    "  --max-entries N           per descriptor (RATEWARDEN_MAX_ENTRIES; 32)\n"
    "  --max-message-bytes N     (RATEWARDEN_MAX_MESSAGE_BYTES; 1048576)\n"
    "  --max-concurrent-streams N  per connection (RATEWARDEN_MAX_CONCURRENT_STREAMS; 1000)\n"
    "  --max-in-flight N         calls being decided at once, gRPC and HTTP; more: RESOURCE_EXHAUSTED\n"
    "                            (RATEWARDEN_MAX_IN_FLIGHT; 10000)\n"
    "  --drain-timeout-ms N      at SIGTERM, for calls in flight (RATEWARDEN_DRAIN_TIMEOUT_MS; 5000)\n"
    "  --limit-headers STYLE     envoy: RateLimit-Limit/-Remaining/-Reset; ietf: RateLimit-Policy and RateLimit;\n"
    "                            off: none (RATEWARDEN_LIMIT_HEADERS; envoy). --no-limit-headers: off\n"
    "SIGHUP reloads the config (and HTTP's TLS files); SIGTERM drains and exits.\n";

ServerOptions parse_options(int argc, char** argv) {
  ServerOptions o;
  using Set = std::function<void(const std::string& name, const std::string& value)>;
  const std::map<std::string, std::pair<const char*, Set>> flags = {
      {"--config", {"RATEWARDEN_CONFIG", [&](auto&, auto& v) { o.config = v; }}},
      {"--store", {"RATEWARDEN_STORE", [&](auto&, auto& v) { o.store = v; }}},
      {"--grpc-listen", {"RATEWARDEN_GRPC_LISTEN", [&](auto&, auto& v) { o.grpc_listen = v; }}},
      {"--http-listen", {"RATEWARDEN_HTTP_LISTEN", [&](auto&, auto& v) { o.http_listen = v; }}},
      {"--metrics-listen", {"RATEWARDEN_METRICS_LISTEN", [&](auto&, auto& v) { o.metrics_listen = v; }}},
      {"--tls-cert", {"RATEWARDEN_TLS_CERT", [&](auto&, auto& v) { o.tls.cert = v; }}},
      {"--tls-key", {"RATEWARDEN_TLS_KEY", [&](auto&, auto& v) { o.tls.key = v; }}},
      {"--tls-client-ca", {"RATEWARDEN_TLS_CLIENT_CA", [&](auto&, auto& v) { o.tls.client_ca = v; }}},
      {"--tls-refresh-s",
       {"RATEWARDEN_TLS_REFRESH_S", [&](auto& n, auto& v) { o.tls.refresh_s = whole(n, v, 1, 86400); }}},
      {"--max-descriptors",
       {"RATEWARDEN_MAX_DESCRIPTORS", [&](auto& n, auto& v) { o.service.max_descriptors = whole(n, v, 1, 10000); }}},
      {"--max-entries",
       {"RATEWARDEN_MAX_ENTRIES", [&](auto& n, auto& v) { o.service.max_entries = whole(n, v, 1, 1000); }}},
      {"--max-message-bytes",
       {"RATEWARDEN_MAX_MESSAGE_BYTES", [&](auto& n, auto& v) { o.max_message_bytes = whole(n, v, 1024, 1 << 26); }}},
      {"--max-concurrent-streams",
       {"RATEWARDEN_MAX_CONCURRENT_STREAMS",
        [&](auto& n, auto& v) { o.max_concurrent_streams = whole(n, v, 1, 1000000); }}},
      {"--max-in-flight",
       {"RATEWARDEN_MAX_IN_FLIGHT", [&](auto& n, auto& v) { o.service.max_in_flight = whole(n, v, 1, 10000000); }}},
      {"--drain-timeout-ms",
       {"RATEWARDEN_DRAIN_TIMEOUT_MS", [&](auto& n, auto& v) { o.drain_ms = whole(n, v, 0, 3600000); }}},
      {"--limit-headers",
       {"RATEWARDEN_LIMIT_HEADERS", [&](auto& n, auto& v) { o.service.limit_headers = header_style(n, v); }}},
  };
  for (const auto& [flag, entry] : flags)
    if (const char* value = std::getenv(entry.first)) entry.second(entry.first, value);
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      o.help = true;
      continue;
    }
    if (arg == "--no-limit-headers") {
      o.service.limit_headers = ServiceOptions::Headers::off;
      continue;
    }
    std::string value;
    const size_t eq = arg.find('=');
    if (eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg.resize(eq);
    }
    const auto it = flags.find(arg);
    if (it == flags.end()) throw InvalidArgument("unknown option \"" + arg + "\"\n" + kUsage);
    if (eq == std::string::npos) {
      if (i + 1 >= argc) throw InvalidArgument(arg + " needs a value");
      value = argv[++i];
    }
    it->second.second(arg, value);
  }
  if (o.tls.cert.empty() != o.tls.key.empty())
    throw InvalidArgument("--tls-cert and --tls-key go together (RATEWARDEN_TLS_CERT, RATEWARDEN_TLS_KEY)");
  if (!o.tls.client_ca.empty() && !o.tls.enabled())
    throw InvalidArgument("--tls-client-ca (mutual TLS) needs --tls-cert and --tls-key");
  return o;
}

}  // namespace ratewarden::server
