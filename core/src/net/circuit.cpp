#include "net/circuit.hpp"

#include "metrics/call_metrics.hpp"

namespace ratewarden {

Circuit::~Circuit() {
  if (open_until_us_ != 0 && options_.metrics) options_.metrics->circuit_left();
}

void Circuit::open(int64_t until_us) {
  if (open_until_us_ == 0 && options_.metrics)
    options_.metrics->circuit_opened(options_.server, std::to_string(failures_) + " calls in a row failed (last: " +
                                                          last_failure_ + "); calls fail at once for " +
                                                          std::to_string(options_.backoff_us / 1000) + " ms");
  open_until_us_ = until_us;
}

bool Circuit::lets_through(int64_t now_us, bool& probe) {
  probe = false;
  if (open_until_us_ == 0) return true;
  if (now_us < open_until_us_ || probe_in_flight_) return false;
  probe_in_flight_ = probe = true;
  return true;
}

std::string Circuit::refusal(int64_t now_us) const {
  const int64_t wait_ms = now_us >= open_until_us_ ? 0 : (open_until_us_ - now_us + 999) / 1000;
  return "not tried: " + std::to_string(failures_) + " calls in a row failed (last: " + last_failure_ +
         "); the next try is in " + std::to_string(wait_ms) + " ms";
}

void Circuit::answered() {
  if (open_until_us_ != 0 && options_.metrics) options_.metrics->circuit_closed(options_.server);
  failures_ = 0;
  open_until_us_ = 0;
  probe_in_flight_ = false;
}

void Circuit::failed(int64_t now_us, bool probe, const std::string& message) {
  last_failure_ = message;
  if (options_.failures <= 0) return;
  ++failures_;
  if (probe) {
    probe_in_flight_ = false;
    open(now_us + options_.backoff_us);
  } else if (failures_ >= options_.failures && open_until_us_ == 0) {
    open(now_us + options_.backoff_us);
  }
}

}  // namespace ratewarden
