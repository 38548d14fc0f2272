// envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit on the core's asynchronous calls: no thread waits for
// a store; a call's descriptors are decided together, and the last answer finishes the call (docs/server.md).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "config.hpp"
#include "server_metrics.hpp"
#include "envoy/service/ratelimit/v3/rls.grpc.pb.h"

namespace ratewarden::server {

struct ServiceOptions {
  size_t max_descriptors = 64;         // per request
  size_t max_entries = 32;             // per descriptor
  int64_t max_in_flight = 10000;       // calls being decided at once; more are refused RESOURCE_EXHAUSTED
  // The response's headers: envoyproxy/ratelimit's RateLimit-Limit / -Remaining / -Reset of the tightest
  // descriptor, the IETF draft's RateLimit-Policy and RateLimit (every limited descriptor), or none.
  enum class Headers { envoy, ietf, off } limit_headers = Headers::envoy;
  std::function<int64_t()> wall_now_s;  // the epoch windows' clock (seconds); empty: the system clock
};

// What a request decides; the call's answer is given to `done` once (from whichever thread answers last).
using RlsRequest = envoy::service::ratelimit::v3::RateLimitRequest;
using RlsResponse = envoy::service::ratelimit::v3::RateLimitResponse;
using RlsDone = std::function<void(const grpc::Status& status)>;

class RateLimiting {
 public:
  RateLimiting(std::shared_ptr<const Config> config, std::shared_ptr<Store> store, ServiceOptions options);

  // Fills `response` (which must live until `done`) and calls `done` exactly once.
  void decide(const RlsRequest& request, RlsResponse* response, RlsDone done);

  // The configuration later calls use; calls in flight keep theirs.
  void set_config(std::shared_ptr<const Config> config) { std::atomic_store(&config_, std::move(config)); }
  std::shared_ptr<const Config> config() const { return std::atomic_load(&config_); }
  ServerMetrics& metrics() { return metrics_; }

 private:
  class Call;
  // The limiter of a descriptor's own limit (its `limit` override), made once per distinct limit (at most
  // kMaxOverrides kept). Null with `error` set for a bad limit; null without one for a limit of 0.
  std::shared_ptr<Limiter> override_limiter(uint32_t requests_per_unit, int unit, std::string* error);

  // decide() without the request's figures: `done` is called once, whatever throws.
  void decide_request(const RlsRequest& request, RlsResponse* response, RlsDone done);
  // The call's plan, ready to start; or a status to answer at once (OK with no call: answered in `response`).
  grpc::Status plan(const RlsRequest& request, RlsResponse* response, std::shared_ptr<Call>& call);

  std::shared_ptr<const Config> config_;
  std::shared_ptr<Store> store_;
  ServerMetrics metrics_;
  ServiceOptions options_;
  std::mutex overrides_mu_;
  std::map<std::pair<uint32_t, int>, std::shared_ptr<Limiter>> overrides_;
};

// The gRPC face of RateLimiting (the callback API: a reactor per call, finished by the last answer). The method is
// raw: the request's bytes are parsed here, so that bytes that are no RateLimitRequest (a string that is not UTF-8, a
// truncated or malformed message) are INVALID_ARGUMENT saying so. gRPC's generated handler answered them UNIMPLEMENTED
// with no message, and protobuf logged a line for each invalid string (a log any client could flood).
class RlsService final : public envoy::service::ratelimit::v3::RateLimitService::WithRawCallbackMethod_ShouldRateLimit<
                             envoy::service::ratelimit::v3::RateLimitService::Service> {
 public:
  explicit RlsService(std::shared_ptr<RateLimiting> limiting);
  grpc::ServerUnaryReactor* ShouldRateLimit(grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
                                            grpc::ByteBuffer* response) override;

 private:
  std::shared_ptr<RateLimiting> limiting_;
};

}  // namespace ratewarden::server
