#include "tls.hpp"

#include <arpa/inet.h>
#include <unistd.h>

#include <cstdlib>

#include <openssl/err.h>
#include <openssl/x509v3.h>

#include "ratewarden/errors.hpp"

namespace ratewarden {
namespace {

// No atexit cleanup: the I/O thread may still be inside OpenSSL while the process exits.
void init_openssl() {
  static const bool done = OPENSSL_init_ssl(OPENSSL_INIT_NO_ATEXIT, nullptr) == 1;
  (void)done;
}

// The CA bundles of the distributions, in the order Go's crypto/x509 probes them.
constexpr const char* kCaBundles[] = {
    "/etc/ssl/certs/ca-certificates.crt",                 // Debian, Ubuntu, Arch, Gentoo; Alpine too
    "/etc/pki/tls/certs/ca-bundle.crt",                   // Fedora, RHEL
    "/etc/ssl/ca-bundle.pem",                             // openSUSE
    "/etc/pki/tls/cacert.pem",                            // OpenELEC
    "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",  // CentOS, RHEL 7+
    "/etc/ssl/cert.pem",                                  // Alpine, and what LibreSSL-based systems use
};

bool readable(const char* path) { return path != nullptr && access(path, R_OK) == 0; }

// The CA certificates when no tls_ca is given. OpenSSL looks in SSL_CERT_FILE / SSL_CERT_DIR when set, else in the
// OPENSSLDIR fixed when it was built. In the wheel and the npm prebuilt, OpenSSL is linked in from Debian, whose
// OPENSSLDIR (/usr/lib/ssl) only Debian and Ubuntu have: where it is missing and neither variable is set, the first
// bundle found in another distribution's place is loaded too.
bool load_default_cas(SSL_CTX* ctx) {
  if (SSL_CTX_set_default_verify_paths(ctx) != 1) return false;
  if (std::getenv(X509_get_default_cert_file_env()) != nullptr ||
      std::getenv(X509_get_default_cert_dir_env()) != nullptr || readable(X509_get_default_cert_file()) ||
      readable(X509_get_default_cert_dir()))
    return true;
  for (const char* bundle : kCaBundles)
    if (readable(bundle) && SSL_CTX_load_verify_locations(ctx, bundle, nullptr) == 1) return true;
  ERR_clear_error();  // none found or none loaded: the handshake will say that no CA verifies the server
  return true;
}

bool is_ip_address(const std::string& host) {
  unsigned char buf[sizeof(in6_addr)];
  return inet_pton(AF_INET, host.c_str(), buf) == 1 || inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

}  // namespace

std::string tls_error(const char* fallback) {
  unsigned long code = ERR_get_error();
  if (code == 0) return fallback;
  std::string reason;
  for (; code != 0; code = ERR_get_error()) {  // the last one queued is the most specific
    const char* r = ERR_reason_error_string(code);
    reason = r != nullptr ? r : fallback;
  }
  return reason;
}

TlsContext::TlsContext(const TlsOptions& options) : sni_(options.sni), verify_(options.verify) {
  init_openssl();
  ctx_ = SSL_CTX_new(TLS_client_method());
  if (ctx_ == nullptr) throw InvalidArgument("TLS: " + tls_error("cannot create a context"));
  SSL_CTX_set_min_proto_version(ctx_, TLS1_2_VERSION);
  SSL_CTX_set_mode(ctx_, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  const bool ca_ok = options.ca_file.empty() ? load_default_cas(ctx_)
                                             : SSL_CTX_load_verify_locations(ctx_, options.ca_file.c_str(), nullptr) == 1;
  std::string problem;
  if (!ca_ok) problem = "cannot load the CA file \"" + options.ca_file + "\" (" + tls_error("unreadable") + ")";
  if (problem.empty() && options.cert_file.empty() != options.key_file.empty())
    problem = "tls_cert and tls_key go together";
  if (problem.empty() && !options.cert_file.empty()) {
    if (SSL_CTX_use_certificate_chain_file(ctx_, options.cert_file.c_str()) != 1)
      problem = "cannot load the certificate \"" + options.cert_file + "\" (" + tls_error("unreadable") + ")";
    else if (SSL_CTX_use_PrivateKey_file(ctx_, options.key_file.c_str(), SSL_FILETYPE_PEM) != 1)
      problem = "cannot load the key \"" + options.key_file + "\" (" + tls_error("unreadable") + ")";
    else if (SSL_CTX_check_private_key(ctx_) != 1)
      problem = "the key \"" + options.key_file + "\" does not match the certificate";
  }
  if (!problem.empty()) {
    SSL_CTX_free(ctx_);
    throw InvalidArgument("TLS: " + problem);
  }
  SSL_CTX_set_verify(ctx_, verify_ ? SSL_VERIFY_PEER : SSL_VERIFY_NONE, nullptr);
}

TlsContext::~TlsContext() { SSL_CTX_free(ctx_); }

SSL* TlsContext::open(int fd, const std::string& host, std::string& error) const {
  SSL* ssl = SSL_new(ctx_);
  if (ssl == nullptr || SSL_set_fd(ssl, fd) != 1) {
    error = tls_error("cannot create a session");
    if (ssl != nullptr) SSL_free(ssl);
    return nullptr;
  }
  const std::string& name = sni_.empty() ? host : sni_;
  if (!name.empty() && !is_ip_address(name)) SSL_set_tlsext_host_name(ssl, name.c_str());
  if (verify_ && !name.empty()) {
    if (is_ip_address(name))
      X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), name.c_str());
    else
      SSL_set1_host(ssl, name.c_str());
  }
  return ssl;
}

}  // namespace ratewarden
