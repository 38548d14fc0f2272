#include "net/network_url.hpp"

#include "ratewarden/errors.hpp"

namespace ratewarden {

void take_network_options(Url& url, std::string_view text, NetworkOptions& o) {
  o.timeout_us = take_duration_us(url, "timeout", o.timeout_us);
  o.connect_timeout_us = take_duration_us(url, "connect_timeout", o.connect_timeout_us);
  o.pool = static_cast<int>(take_int(url, "pool", o.pool, 1, 64));
  o.circuit_failures = static_cast<int>(take_int(url, "circuit_failures", o.circuit_failures, 0, 1000000));
  o.circuit_backoff_us = take_duration_us(url, "circuit_backoff", o.circuit_backoff_us);
  try {
    validate_network_options(o);  // the rules of options set in code, told with the URL
  } catch (const InvalidArgument& e) {
    invalid_url(text, e.what());
  }
}

void validate_network_options(const NetworkOptions& o) {
  if (o.pool < 1 || o.pool > 64) throw InvalidArgument("pool must be between 1 and 64");
  if (o.timeout_us < 1000 || o.connect_timeout_us < 1000) throw InvalidArgument("timeouts must be at least 1 ms");
  if (o.circuit_failures < 0) throw InvalidArgument("circuit_failures must be 0 (off) or more");
  if (o.circuit_backoff_us < 1000) throw InvalidArgument("circuit_backoff must be at least 1 ms");
}

CircuitOptions circuit_of(const NetworkOptions& o, std::shared_ptr<CallMetrics> metrics, std::string server) {
  CircuitOptions c;
  c.failures = o.circuit_failures;
  c.backoff_us = o.circuit_backoff_us;
  c.metrics = std::move(metrics);
  c.server = std::move(server);
  return c;
}

std::string describe_network_options(const NetworkOptions& o) {
  return "timeout=" + std::to_string(o.timeout_us / 1000) + "ms&connect_timeout=" +
         std::to_string(o.connect_timeout_us / 1000) + "ms&pool=" + std::to_string(o.pool);
}

}  // namespace ratewarden
