// TLS of the server's listeners (internal; docs/server.md, "TLS and who may call it"). One certificate, key and
// optional client CA serve gRPC and HTTP:
// - gRPC: gRPC's own file watcher (grpc::experimental::FileWatcherCertificateProvider) re-reads the files every
//   `refresh_s` seconds; new handshakes use what it read last. gRPC 1.51 offers no way to make it read at once.
// - HTTP: an OpenSSL context built here from the files' contents; SslContextLoader builds a new one only when the
//   contents changed, and keeps the previous one when the new files do not load. The server re-reads on the same
//   interval and at every config reload (SIGHUP, the config directory's changes); new connections take the new one.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

struct ssl_ctx_st;  // OpenSSL's SSL_CTX

namespace grpc {
class ServerCredentials;
namespace experimental {
class CertificateProviderInterface;
}
}  // namespace grpc

namespace ratewarden::server {

struct TlsOptions {
  std::string cert;       // --tls-cert: PEM, the server's certificate first, then its intermediates
  std::string key;        // --tls-key: PEM, the certificate's private key
  std::string client_ca;  // --tls-client-ca: PEM; set: mutual TLS, a client must present a certificate it signed
  int64_t refresh_s = 60;  // --tls-refresh-s: how often the files are re-read
  bool enabled() const { return !cert.empty(); }
  bool mutual() const { return !client_ca.empty(); }
};

using SslContext = std::shared_ptr<ssl_ctx_st>;

// A connection whose handshake has not finished by then is closed, on both listeners (gRPC's default: 120 s).
constexpr int kHandshakeTimeoutMs = 10000;

// The HTTP listener's contexts, from the files as they are on each load().
class SslContextLoader {
 public:
  explicit SslContextLoader(TlsOptions options) : options_(std::move(options)) {}
  // The context of the files' current contents: the same one while they are unchanged, a new one when they changed.
  // Throws std::runtime_error naming the file and what is wrong with it (a key that does not match the certificate,
  // as a renewal half written shows); the previous context stays the current one then.
  SslContext load();

 private:
  const TlsOptions options_;
  std::string contents_;  // of the files the current context was built from
  SslContext context_;
};

// gRPC's credentials for the options: plaintext when TLS is off. The provider (null when plaintext) must outlive
// the server that uses the credentials.
struct GrpcTls {
  std::shared_ptr<grpc::ServerCredentials> credentials;
  std::shared_ptr<grpc::experimental::CertificateProviderInterface> provider;
};
GrpcTls grpc_tls(const TlsOptions& options);

}  // namespace ratewarden::server
