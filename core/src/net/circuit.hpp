// The circuit breaker of one server of a network store — a Redis node, a PostgreSQL server (internal; on the I/O
// thread). docs/deployment.md, "Fail open or closed".
//
// After `failures` failures in a row for want of the server (refused, cut, silent for a whole timeout — neither an
// error reply nor a call that ran out of time behind others on a busy server counts; Redis counts the calls that
// failed so, PostgreSQL the connections, each with the calls it held), the circuit opens: calls fail at once for
// `backoff`. Then one call goes through as the probe, the others still failing at once: the server's answer closes
// the circuit, the probe's failure opens it for another back-off.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace ratewarden {

class CallMetrics;

struct CircuitOptions {
  int failures = 3;  // 0: never open
  int64_t backoff_us = 1000000;
  std::shared_ptr<CallMetrics> metrics;  // told when the circuit opens and closes (null: nobody)
  std::string server;                    // the server's name, for the events
};

class Circuit {
 public:
  explicit Circuit(CircuitOptions options) : options_(std::move(options)) {}
  ~Circuit();  // an open circuit that goes (its store closed) no longer counts as open

  // Whether a call may go to the server at `now_us`; `probe` is set when it goes as the probe.
  bool lets_through(int64_t now_us, bool& probe);
  // Why a call was not let through: "not tried: 3 calls in a row failed (last: ...); the next try is in 80 ms".
  std::string refusal(int64_t now_us) const;
  // The server answered a call: the circuit closes (and a probe in flight has done its job).
  void answered();
  // A failure for want of the server; `probe`: of the probe (else the probe in flight, if any, is left to end).
  void failed(int64_t now_us, bool probe, const std::string& message);
  // The probe ended without telling anything of the server (a call retried elsewhere): the next call probes.
  void probe_ended() { probe_in_flight_ = false; }
  bool probing() const { return probe_in_flight_; }

 private:
  void open(int64_t until_us);
  const CircuitOptions options_;
  int failures_ = 0;
  int64_t open_until_us_ = 0;  // 0: closed
  bool probe_in_flight_ = false;
  std::string last_failure_;
};

}  // namespace ratewarden
