// test_certs: certificates for the TLS tests, made with libcrypto into a directory: a CA, leaf
// certificates it signs (or that another CA signs, or that expired), each as PEM files.
// Thread-safety: one thread.
#pragma once

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>

namespace fw::test {

class test_cert {
 public:
  std::string cert, key;  ///< PEM files

  /// A self-signed CA named `cn` in `dir`.
  static test_cert authority(const std::filesystem::path& dir, const std::string& cn) {
    test_cert c;
    c.make(dir, cn, nullptr, 0, 2 * 86400, true);
    return c;
  }
  /// A leaf `cn` signed by `ca`, valid from now + from_s to now + to_s.
  test_cert issue(const std::filesystem::path& dir, const std::string& cn, long from_s = -60, long to_s = 2 * 86400) const {
    test_cert c;
    c.make(dir, cn, this, from_s, to_s, false);
    return c;
  }

  test_cert() = default;
  test_cert(test_cert&&) = default;
  test_cert& operator=(test_cert&&) = default;

 private:
  void make(const std::filesystem::path& dir, const std::string& cn, const test_cert* ca, long from_s, long to_s, bool is_ca) {
    static long serial = 1;
    k_.reset(EVP_EC_gen("P-256"));
    x_.reset(X509_new());
    if (!k_ || !x_) throw std::runtime_error("test_cert: libcrypto failed");
    X509* x = x_.get();
    X509_set_version(x, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(x), serial++);
    X509_gmtime_adj(X509_getm_notBefore(x), from_s);
    X509_gmtime_adj(X509_getm_notAfter(x), to_s);
    X509_set_pubkey(x, k_.get());
    X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_ASC,
                               reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
    X509_set_issuer_name(x, X509_get_subject_name(ca ? ca->x_.get() : x));
    X509V3_CTX ctx;
    X509V3_set_ctx(&ctx, ca ? ca->x_.get() : x, x, nullptr, nullptr, 0);
    const char* bc = is_ca ? "critical,CA:TRUE" : "CA:FALSE";
    X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, NID_basic_constraints, bc);
    X509_add_ext(x, ext, -1);
    X509_EXTENSION_free(ext);
    if (!X509_sign(x, ca ? ca->k_.get() : k_.get(), EVP_sha256())) throw std::runtime_error("test_cert: signing failed");
    cert = (dir / (cn + ".pem")).string();
    key = (dir / (cn + ".key")).string();
    write(cert, [&](FILE* f) { return PEM_write_X509(f, x); });
    write(key, [&](FILE* f) { return PEM_write_PrivateKey(f, k_.get(), nullptr, nullptr, 0, nullptr, nullptr); });
  }
  template <class F>
  static void write(const std::string& path, F&& f) {
    FILE* out = std::fopen(path.c_str(), "wb");
    if (!out || !f(out)) throw std::runtime_error("test_cert: cannot write " + path);
    std::fclose(out);
  }
  struct free_x509 { void operator()(X509* x) const { X509_free(x); } };
  struct free_key { void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); } };
  std::unique_ptr<X509, free_x509> x_;
  std::unique_ptr<EVP_PKEY, free_key> k_;
};

}  // namespace fw::test
