// What the HTTP listeners answer (internal): POST /json (the RLS request in proto3 JSON, answered as
// envoyproxy/ratelimit answers it), GET /healthcheck, GET /metrics (Prometheus text). With --metrics-listen, the
// metrics listener answers /metrics and /healthcheck, and the main one /json and /healthcheck.
#pragma once

#include <atomic>
#include <memory>

#include "http_server.hpp"
#include "rls_service.hpp"

namespace ratewarden::server {

// /healthcheck fails (500, as envoyproxy/ratelimit's) while `draining` and while a circuit of the store is open.
// The main listener's routes: /json, /healthcheck, and /metrics when `with_metrics`.
HttpRoute http_routes(std::shared_ptr<RateLimiting> limiting, std::shared_ptr<Store> store,
                      std::shared_ptr<const std::atomic<bool>> draining, bool with_metrics);
// The metrics listener's: /metrics, /healthcheck.
HttpRoute metrics_routes(std::shared_ptr<RateLimiting> limiting, std::shared_ptr<Store> store,
                         std::shared_ptr<const std::atomic<bool>> draining);

}  // namespace ratewarden::server
