// The options every network store reads from its URL the same way (internal): NetworkOptions.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "net/circuit.hpp"
#include "ratewarden/network_options.hpp"
#include "url.hpp"

namespace ratewarden {

// Reads and removes timeout, connect_timeout, pool, circuit_failures and circuit_backoff from `url` into `options`
// (what is absent keeps its value). Throws InvalidArgument naming the URL `text` for a value out of range.
void take_network_options(Url& url, std::string_view text, NetworkOptions& options);
// Throws InvalidArgument for options no store accepts (set in code rather than read from a URL).
void validate_network_options(const NetworkOptions& options);
// The circuit of `server` of a store whose figures are `metrics`.
CircuitOptions circuit_of(const NetworkOptions& options, std::shared_ptr<CallMetrics> metrics, std::string server);
// "timeout=250ms&connect_timeout=1000ms&pool=4": for a store's name, which shows the options in effect.
std::string describe_network_options(const NetworkOptions& options);

}  // namespace ratewarden
