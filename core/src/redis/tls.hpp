// TLS for Redis connections, on OpenSSL (internal).
#pragma once

#include <string>

#include <openssl/ssl.h>

namespace ratewarden {

struct TlsOptions {
  std::string ca_file;    // PEM CA bundle to verify the server with; the system's default paths when empty
  std::string cert_file;  // client certificate (PEM), for servers that ask for one
  std::string key_file;   // its private key (PEM)
  std::string sni;        // server name to send and verify; the host when empty
  bool verify = true;     // verify the server's certificate and name
};

// One SSL_CTX per store, shared by its connections. Throws InvalidArgument for a file that cannot be loaded.
class TlsContext {
 public:
  explicit TlsContext(const TlsOptions& options);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  // A new session for a connection to `host`, on `fd`; null (with `error` set) when OpenSSL cannot make one.
  SSL* open(int fd, const std::string& host, std::string& error) const;
  bool verify() const { return verify_; }

 private:
  SSL_CTX* ctx_ = nullptr;
  std::string sni_;
  bool verify_ = true;
};

// The reason OpenSSL gives for the last failure on this thread (and clears its queue), e.g. "certificate verify
// failed"; `fallback` when it gives none.
std::string tls_error(const char* fallback);

}  // namespace ratewarden
