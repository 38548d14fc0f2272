#include "http_routes.hpp"

#include <google/protobuf/util/json_util.h>

#include "ratewarden/metric_families.hpp"

namespace ratewarden::server {
namespace {

HttpReply text(int status, std::string body) { return HttpReply{status, "text/plain; charset=utf-8", std::move(body)}; }

// The JSON route: the request's proto3 JSON (either field name form; an unknown field is an error), the response's
// (lowerCamelCase, enums by name, defaults left out): 200, or 429 when over the limit, as the peer answers.
void json(RateLimiting& limiting, const HttpRequest& request, const std::function<void(HttpReply)>& reply) {
  auto call = std::make_shared<std::pair<RlsRequest, RlsResponse>>();
  const auto parsed = google::protobuf::util::JsonStringToMessage(request.body, &call->first);
  if (!parsed.ok()) return reply(text(400, "Bad Request: " + std::string(parsed.message()) + "\n"));
  limiting.decide(call->first, &call->second, [call, reply](const grpc::Status& status) {
    if (!status.ok()) {
      const grpc::StatusCode c = status.error_code();
      const int code = c == grpc::StatusCode::INVALID_ARGUMENT                                        ? 400
                       : c == grpc::StatusCode::UNAVAILABLE || c == grpc::StatusCode::RESOURCE_EXHAUSTED ? 503
                                                                                                       : 500;
      return reply(text(code, status.error_message() + "\n"));
    }
    std::string body;
    (void)google::protobuf::util::MessageToJsonString(call->second, &body);
    reply(HttpReply{call->second.overall_code() == RlsResponse::OVER_LIMIT ? 429 : 200, "application/json", body});
  });
}

HttpReply healthcheck(const Store& store, const std::atomic<bool>& draining) {
  if (draining.load()) return text(500, "draining\n");
  if (store.stats().circuits_open > 0) return text(500, "the store's circuit is open\n");
  return text(200, "OK");
}

HttpReply metrics(RateLimiting& limiting) {
  std::vector<MetricFamily> families = metric_families();
  for (MetricFamily& f : limiting.metrics().families()) families.push_back(std::move(f));
  return HttpReply{200, "text/plain; version=0.0.4; charset=utf-8", prometheus_text(families)};
}

}  // namespace

HttpRoute http_routes(std::shared_ptr<RateLimiting> limiting, std::shared_ptr<Store> store,
                      std::shared_ptr<const std::atomic<bool>> draining, bool with_metrics) {
  const std::string routes = with_metrics ? "/json, /healthcheck, /metrics" : "/json, /healthcheck";
  return [=](const HttpRequest& request, std::function<void(HttpReply)> reply) {
    if (request.path == "/json") return json(*limiting, request, reply);
    if (request.method != "GET" && request.method != "HEAD") return reply(text(405, "GET " + request.path + "\n"));
    if (request.path == "/healthcheck") return reply(healthcheck(*store, *draining));
    if (request.path == "/metrics" && with_metrics) return reply(metrics(*limiting));
    reply(text(404, "no route " + request.path + ": " + routes + "\n"));
  };
}

HttpRoute metrics_routes(std::shared_ptr<RateLimiting> limiting, std::shared_ptr<Store> store,
                         std::shared_ptr<const std::atomic<bool>> draining) {
  return [=](const HttpRequest& request, std::function<void(HttpReply)> reply) {
    if (request.method != "GET" && request.method != "HEAD") return reply(text(405, "GET " + request.path + "\n"));
    if (request.path == "/healthcheck") return reply(healthcheck(*store, *draining));
    if (request.path == "/metrics") return reply(metrics(*limiting));
    reply(text(404, "no route " + request.path + ": /metrics, /healthcheck\n"));
  };
}

}  // namespace ratewarden::server
