// What the HTTP listener answers (internal): POST /json (the RLS request in proto3 JSON, answered as
// envoyproxy/ratelimit answers it), GET /healthcheck, GET /metrics (Prometheus text).
#pragma once

#include <atomic>
#include <memory>

#include "http_server.hpp"
#include "rls_service.hpp"

namespace ratewarden::server {

// /healthcheck fails (500, as envoyproxy/ratelimit's) while `draining` and while a circuit of the store is open.
HttpRoute http_routes(std::shared_ptr<RateLimiting> limiting, std::shared_ptr<Store> store,
                      std::shared_ptr<const std::atomic<bool>> draining);

}  // namespace ratewarden::server
