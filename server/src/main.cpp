// ratewarden-server: Envoy's rate limit service API over the ratewarden core (docs/server.md).
//   ratewarden-server --config DIR --store URL --grpc-listen ADDR:PORT --http-listen ADDR:PORT
//                     [--tls-cert FILE --tls-key FILE [--tls-client-ca FILE]] [--metrics-listen ADDR:PORT]
// Each flag has an environment variable (RATEWARDEN_CONFIG, RATEWARDEN_STORE, RATEWARDEN_GRPC_LISTEN,
// RATEWARDEN_HTTP_LISTEN, ...); a flag wins over its variable.
#include <absl/synchronization/mutex.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cerrno>
#include <cstdio>
#include <ctime>
#include <exception>
#include <memory>
#include <mutex>
#include <string>

#include "config.hpp"
#include "http_routes.hpp"
#include "http_server.hpp"
#include "reloader.hpp"
#include "options.hpp"
#include "ratewarden/events.hpp"
#include "ratewarden/store.hpp"
#include "rls_service.hpp"
#include "tls.hpp"

namespace {

using ratewarden::server::ServerOptions;

void log(const std::string& line) { std::fprintf(stderr, "ratewarden-server: %s\n", line.c_str()); }

const char* const kHealthNames[] = {"ratelimit", "envoy.service.ratelimit.v3.RateLimitService"};

std::string address(const std::string& listen, int port) {
  return listen.substr(0, listen.rfind(':')) + ":" + std::to_string(port);
}

int serve(const ServerOptions& o) {
  // Signals are taken by sigwait below: blocked before any thread starts, so that no other thread gets them.
  sigset_t signals;
  sigemptyset(&signals);
  for (int s : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&signals, s);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  // Debian's Abseil is built without NDEBUG, so absl::Mutex runs its deadlock detector: every lock, and every
  // mutex's end, updates one global graph of lock orders under one global lock, and gRPC makes and locks several
  // mutexes per call. About a tenth of the CPU of a call (bench/server/run.sh, seen in perf as
  // GraphCycles); off, as a release build of Abseil has it.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);

  ratewarden::set_event_handler([](const ratewarden::Event& e) {
    log(std::string(ratewarden::event_kind_name(e.kind)) + " " + e.store + ": " + e.message +
        (e.suppressed > 0 ? " (" + std::to_string(e.suppressed) + " more like it)" : ""));
  });
  std::shared_ptr<ratewarden::Store> store = ratewarden::open_store(o.store);
  auto limiting = std::make_shared<ratewarden::server::RateLimiting>(
      ratewarden::server::load_config(o.config, store), store, o.service);
  limiting->metrics().config_load(true);
  ratewarden::server::RlsService service(limiting);
  auto draining = std::make_shared<std::atomic<bool>>(false);

  // TLS: the files are loaded (and checked) once here, whether or not HTTP is on; gRPC's watcher reads them too.
  std::unique_ptr<ratewarden::server::SslContextLoader> tls_loader;
  ratewarden::server::SslContext tls;
  if (o.tls.enabled()) {
    tls_loader = std::make_unique<ratewarden::server::SslContextLoader>(o.tls);
    tls = tls_loader->load();
    limiting->metrics().tls_load(true);
  }
  std::unique_ptr<ratewarden::server::HttpServer> http, metrics_http;
  if (o.http_listen != "off")
    http = std::make_unique<ratewarden::server::HttpServer>(
        o.http_listen, ratewarden::server::http_routes(limiting, store, draining, o.metrics_listen.empty()),
        o.max_message_bytes, tls);
  if (!o.metrics_listen.empty())
    metrics_http = std::make_unique<ratewarden::server::HttpServer>(
        o.metrics_listen, ratewarden::server::metrics_routes(limiting, store, draining), 0, nullptr,
        "--metrics-listen");

  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  int port = 0;
  const ratewarden::server::GrpcTls grpc_tls = ratewarden::server::grpc_tls(o.tls);
  builder.AddListeningPort(o.grpc_listen, grpc_tls.credentials, &port);
  builder.SetMaxReceiveMessageSize(static_cast<int>(o.max_message_bytes));
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, static_cast<int>(o.max_concurrent_streams));
  builder.AddChannelArgument(GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS, ratewarden::server::kHandshakeTimeoutMs);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || port == 0) throw std::runtime_error("cannot listen on " + o.grpc_listen + " for gRPC");
  for (const char* name : kHealthNames) server->GetHealthCheckService()->SetServingStatus(name, true);
  // HTTP's TLS context, rebuilt when the files changed (gRPC's watcher reads them on its own). A failure keeps
  // the previous one; it is counted each time and logged once. Called with `reloading` held.
  std::string tls_failure;
  auto refresh_tls = [&](const char* why) {
    if (!tls_loader) return;
    try {
      ratewarden::server::SslContext fresh = tls_loader->load();
      tls_failure.clear();
      if (fresh == tls) return;
      tls = std::move(fresh);
      if (http) http->set_tls(tls);
      limiting->metrics().tls_load(true);
      log(std::string("TLS files reloaded (") + why + ")");
    } catch (const std::exception& e) {
      limiting->metrics().tls_load(false);
      if (tls_failure != e.what())
        log("TLS files not reloaded (" + std::string(why) + "), the previous ones stay: " + e.what());
      tls_failure = e.what();
    }
  };

  // SIGHUP and the directory's changes reload the same way, one at a time.
  std::mutex reloading;
  auto reload = [&, limiting, store](const char* why) {
    std::lock_guard<std::mutex> lock(reloading);
    refresh_tls(why);
    try {
      limiting->set_config(ratewarden::server::load_config(o.config, store));
      limiting->metrics().config_load(true);
      log(std::string("config reloaded (") + why + ") from " + o.config);
    } catch (const std::exception& e) {
      limiting->metrics().config_load(false);
      log("config not reloaded (" + std::string(why) + "), the previous one stays: " + e.what());
    }
  };
  ratewarden::server::Reloader watcher(o.config, [&reload] { reload("the directory changed"); });
  // Said once the directory is watched: a change made once the server has said it listens is never missed.
  std::string listening = "gRPC on " + address(o.grpc_listen, port) +
                          ", HTTP on " + (http ? address(o.http_listen, http->port()) : "off");
  if (metrics_http) listening += ", metrics on " + address(o.metrics_listen, metrics_http->port());
  if (o.tls.enabled()) listening += o.tls.mutual() ? ", mutual TLS" : ", TLS";
  std::printf("ratewarden-server: %s, store %s, config %s\n", listening.c_str(), store->describe().c_str(),
              o.config.c_str());
  std::fflush(stdout);

  // The TLS files are also re-read every --tls-refresh-s, as gRPC's watcher reads them.
  const timespec refresh{static_cast<time_t>(o.tls.refresh_s), 0};
  while (true) {
    const int signal = sigtimedwait(&signals, nullptr, tls_loader ? &refresh : nullptr);
    if (signal < 0) {
      if (errno == EAGAIN) {
        std::lock_guard<std::mutex> lock(reloading);
        refresh_tls("changed on disk");
      }
      continue;
    }
    if (signal == SIGHUP) {
      reload("SIGHUP");
      continue;
    }
    // Draining: health fails at once; calls in flight, gRPC and HTTP, finish within the drain timeout.
    log("draining (signal " + std::to_string(signal) + ")");
    draining->store(true);
    for (const char* name : kHealthNames) server->GetHealthCheckService()->SetServingStatus(name, false);
    const auto deadline = std::chrono::system_clock::now() + std::chrono::milliseconds(o.drain_ms);
    if (http) http->drain();
    server->Shutdown(deadline);
    if (http && !http->wait_drained(deadline)) log("HTTP requests unanswered at the drain timeout are dropped");
    http.reset();
    metrics_http.reset();
    return 0;
  }
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const ServerOptions o = ratewarden::server::parse_options(argc, argv);
    if (o.help) {
      std::fputs(ratewarden::server::kUsage, stdout);
      return 0;
    }
    return serve(o);
  } catch (const std::exception& e) {
    log(e.what());
    return 2;
  }
}
