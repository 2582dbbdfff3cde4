#include "runtime/net/link_tls.hpp"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>

#include <fstream>
#include <memory>

namespace fw {

namespace {

/// OpenSSL's queued reasons, most recent last, without its error codes.
std::string ssl_reasons() {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    const char* r = ERR_reason_error_string(e);
    if (!out.empty()) out += "; ";
    out += r ? r : "unknown OpenSSL error";
  }
  return out.empty() ? std::string("not a PEM file OpenSSL can use") : out;
}

expected<void> readable(const char* key, const std::string& path) {
  if (path.empty()) return make_error(errc::invalid_argument, std::string("node.") + key + " is empty");
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(errc::io_error, std::string("node.") + key + ": cannot read " + path);
  return {};
}

expected<void> refuse(const char* key, const std::string& path, const std::string& why) {
  return make_error(errc::invalid_argument, std::string("node.") + key + " " + path + ": " + why);
}

/// An encrypted key would make OpenSSL ask on the terminal (and CAF's link has no passphrase):
/// refuse it instead.
int no_passphrase(char*, int, int, void*) { return 0; }

}  // namespace

expected<void> check_link_tls(const link_tls& t) {
  for (auto [key, path] : {std::pair{"tls_cert", &t.cert}, std::pair{"tls_key", &t.key}, std::pair{"tls_ca", &t.ca}})
    if (auto ok = readable(key, *path); !ok) return ok.err();
  std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> ctx(SSL_CTX_new(TLS_method()), SSL_CTX_free);
  if (!ctx) return make_error(errc::internal, "cannot make an OpenSSL context: " + ssl_reasons());
  ERR_clear_error();
  if (SSL_CTX_use_certificate_chain_file(ctx.get(), t.cert.c_str()) != 1)
    return refuse("tls_cert", t.cert, "not a PEM certificate chain (" + ssl_reasons() + ")");
  X509* leaf = SSL_CTX_get0_certificate(ctx.get());
  if (X509_cmp_current_time(X509_get0_notBefore(leaf)) > 0) return refuse("tls_cert", t.cert, "the certificate is not valid yet");
  if (X509_cmp_current_time(X509_get0_notAfter(leaf)) < 0) return refuse("tls_cert", t.cert, "the certificate has expired");
  std::unique_ptr<BIO, decltype(&BIO_free)> kf(BIO_new_file(t.key.c_str(), "r"), BIO_free);
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(
      kf ? PEM_read_bio_PrivateKey(kf.get(), nullptr, no_passphrase, nullptr) : nullptr, EVP_PKEY_free);
  if (!key) return refuse("tls_key", t.key, "not an unencrypted PEM private key (" + ssl_reasons() + ")");
  if (EVP_PKEY_eq(X509_get0_pubkey(leaf), key.get()) != 1)
    return refuse("tls_key", t.key, "not the private key of node.tls_cert " + t.cert);
  if (SSL_CTX_load_verify_locations(ctx.get(), t.ca.c_str(), nullptr) != 1)
    return refuse("tls_ca", t.ca, "no PEM CA certificate in it (" + ssl_reasons() + ")");

  STACK_OF(X509)* chain = nullptr;
  SSL_CTX_get0_chain_certs(ctx.get(), &chain);
  std::unique_ptr<X509_STORE_CTX, decltype(&X509_STORE_CTX_free)> vc(X509_STORE_CTX_new(), X509_STORE_CTX_free);
  if (!vc || X509_STORE_CTX_init(vc.get(), SSL_CTX_get_cert_store(ctx.get()), leaf, chain) != 1)
    return make_error(errc::internal, "cannot verify node.tls_cert: " + ssl_reasons());
  if (X509_verify_cert(vc.get()) != 1)
    return refuse("tls_cert", t.cert,
                  std::string("node.tls_ca ") + t.ca + " does not verify it (" +
                      X509_verify_cert_error_string(X509_STORE_CTX_get_error(vc.get())) +
                      "); every node checks its peers' certificates against its own tls_ca");
  ERR_clear_error();
  return {};
}

}  // namespace fw
