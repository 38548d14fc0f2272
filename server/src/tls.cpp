#include "tls.hpp"

#include <grpcpp/security/server_credentials.h>
#include <grpcpp/security/tls_certificate_provider.h>
#include <grpcpp/security/tls_credentials_options.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace ratewarden::server {
namespace {

// OpenSSL's reason for the last failure (its queue emptied), or `fallback` when it gave none.
std::string openssl_error(const char* fallback) {
  std::string why;
  while (const unsigned long code = ERR_get_error()) {
    char text[256];
    ERR_error_string_n(code, text, sizeof text);
    why = text;  // the last is the closest to the cause
  }
  return why.empty() ? fallback : why;
}

std::string read_file(const char* flag, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  if (in) out << in.rdbuf();
  if (!in || in.bad()) throw std::runtime_error(std::string(flag) + " " + path + ": " + std::strerror(errno));
  return out.str();
}

using Bio = std::unique_ptr<BIO, decltype(&BIO_free)>;
Bio memory_bio(const std::string& pem) {
  return Bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), BIO_free);
}

// An encrypted key is refused, never prompted for on the terminal.
int no_passphrase(char*, int, int, void*) { return 0; }

void use_certificates(SSL_CTX* ctx, const std::string& pem, const std::string& path) {
  Bio bio = memory_bio(pem);
  X509* leaf = PEM_read_bio_X509_AUX(bio.get(), nullptr, no_passphrase, nullptr);
  if (leaf == nullptr) throw std::runtime_error("--tls-cert " + path + ": no PEM certificate in it");
  const int used = SSL_CTX_use_certificate(ctx, leaf);
  X509_free(leaf);
  if (used != 1) throw std::runtime_error("--tls-cert " + path + ": " + openssl_error("refused"));
  while (X509* intermediate = PEM_read_bio_X509(bio.get(), nullptr, no_passphrase, nullptr))
    if (SSL_CTX_add0_chain_cert(ctx, intermediate) != 1) {  // owns it once added
      X509_free(intermediate);
      throw std::runtime_error("--tls-cert " + path + ": " + openssl_error("an intermediate is refused"));
    }
  ERR_clear_error();  // the end of the file
}

void use_key(SSL_CTX* ctx, const std::string& pem, const TlsOptions& o) {
  Bio bio = memory_bio(pem);
  EVP_PKEY* key = PEM_read_bio_PrivateKey(bio.get(), nullptr, no_passphrase, nullptr);
  if (key == nullptr)
    throw std::runtime_error("--tls-key " + o.key + ": no unencrypted PEM private key in it (" +
                             openssl_error("unreadable") + ")");
  const int used = SSL_CTX_use_PrivateKey(ctx, key);
  EVP_PKEY_free(key);
  if (used != 1 || SSL_CTX_check_private_key(ctx) != 1) {
    ERR_clear_error();
    throw std::runtime_error("--tls-key " + o.key + " is not the key of the certificate in --tls-cert " + o.cert);
  }
}

// Mutual TLS: a client must present a certificate that one of the CA file's certificates signed.
void require_client_certificates(SSL_CTX* ctx, const std::string& pem, const std::string& path) {
  Bio bio = memory_bio(pem);
  STACK_OF(X509_NAME)* names = sk_X509_NAME_new_null();
  X509_STORE* store = SSL_CTX_get_cert_store(ctx);
  while (X509* ca = PEM_read_bio_X509(bio.get(), nullptr, no_passphrase, nullptr)) {
    X509_STORE_add_cert(store, ca);  // takes its own reference
    sk_X509_NAME_push(names, X509_NAME_dup(X509_get_subject_name(ca)));
    X509_free(ca);
  }
  ERR_clear_error();
  if (sk_X509_NAME_num(names) == 0) {
    sk_X509_NAME_pop_free(names, X509_NAME_free);
    throw std::runtime_error("--tls-client-ca " + path + ": no PEM certificate in it");
  }
  SSL_CTX_set_client_CA_list(ctx, names);  // the names a client is asked for; owns them
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
}

SslContext build(const TlsOptions& o, const std::string& cert, const std::string& key, const std::string& ca) {
  SslContext ctx(SSL_CTX_new(TLS_server_method()), SSL_CTX_free);
  if (!ctx) throw std::runtime_error("TLS: " + openssl_error("SSL_CTX_new failed"));
  SSL_CTX* c = ctx.get();
  SSL_CTX_set_min_proto_version(c, TLS1_2_VERSION);
  SSL_CTX_set_options(c, SSL_OP_NO_RENEGOTIATION | SSL_OP_IGNORE_UNEXPECTED_EOF | SSL_OP_CIPHER_SERVER_PREFERENCE);
  // The listener writes what it can and retries later from the same buffer, which may have grown since.
  SSL_CTX_set_mode(c, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  static const unsigned char kSessionContext[] = "ratewarden-server";  // resumed sessions keep their verification
  SSL_CTX_set_session_id_context(c, kSessionContext, sizeof kSessionContext - 1);
  use_certificates(c, cert, o.cert);
  use_key(c, key, o);
  if (o.mutual()) require_client_certificates(c, ca, o.client_ca);
  return ctx;
}

}  // namespace

SslContext SslContextLoader::load() {
  const std::string cert = read_file("--tls-cert", options_.cert);
  const std::string key = read_file("--tls-key", options_.key);
  const std::string ca = options_.mutual() ? read_file("--tls-client-ca", options_.client_ca) : std::string();
  std::string contents = cert + '\0' + key + '\0' + ca;
  if (context_ && contents == contents_) return context_;
  context_ = build(options_, cert, key, ca);
  contents_ = std::move(contents);
  return context_;
}

GrpcTls grpc_tls(const TlsOptions& o) {
  if (!o.enabled()) return {grpc::InsecureServerCredentials(), nullptr};
  namespace x = grpc::experimental;
  auto provider = std::make_shared<x::FileWatcherCertificateProvider>(o.key, o.cert, o.client_ca,
                                                                       static_cast<unsigned>(o.refresh_s));
  x::TlsServerCredentialsOptions options(provider);
  options.watch_identity_key_cert_pairs();
  if (o.mutual()) {
    options.watch_root_certs();
    options.set_cert_request_type(GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  } else {
    options.set_cert_request_type(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  }
  return {x::TlsServerCredentials(options), provider};
}

}  // namespace ratewarden::server
