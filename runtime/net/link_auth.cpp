#include "runtime/net/link_auth.hpp"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/rand.h>
#include <sys/stat.h>

#include <cctype>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include "runtime/base/log.hpp"

namespace fw {

namespace {
constexpr std::string_view proof_label = "flywheel node link proof v1";
constexpr std::string_view session_label = "flywheel node link session v1";

std::string trimmed(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  return s;
}
}  // namespace

expected<std::string> load_link_secret(const std::string& secret_file, const char* env_value) {
  std::string secret, from;
  if (!secret_file.empty()) {
    std::ifstream in(secret_file, std::ios::binary);
    if (!in) return make_error(errc::io_error, "node.secret_file: cannot read " + secret_file);
    secret = trimmed(std::string(std::istreambuf_iterator<char>(in), {}));
    from = "node.secret_file " + secret_file;
    struct stat st {};
    if (::stat(secret_file.c_str(), &st) == 0 && (st.st_mode & 077))
      log_warn(from + " can be read by other users (chmod 600 it)");
  } else if (env_value && *env_value) {
    secret = trimmed(env_value);
    from = "FLYWHEEL_NODE_SECRET";
  } else {
    return std::string();
  }
  if (secret.size() < link_secret_min_bytes)
    return make_error(errc::invalid_argument, from + ": the secret has " + std::to_string(secret.size()) +
                                                  " bytes; at least " + std::to_string(link_secret_min_bytes) +
                                                  " are needed (e.g. `openssl rand -hex 32`)");
  return secret;
}

std::string make_nonce() {
  std::string n(32, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(n.data()), static_cast<int>(n.size())) != 1)
    throw std::runtime_error("the operating system's random source failed (RAND_bytes)");
  return n;
}

namespace {
/// OpenSSL's HMAC implementation, fetched once (a fetch searches the provider store under a lock;
/// a seal per KV chunk need not repeat it). Kept for the process's life.
EVP_MAC* hmac_algorithm() {
  static EVP_MAC* const mac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
  return mac;
}
}  // namespace

struct hmac_sha256::impl {
  EVP_MAC_CTX* ctx = nullptr;
  ~impl() { EVP_MAC_CTX_free(ctx); }
};

hmac_sha256::hmac_sha256(std::string_view key) : impl_(std::make_unique<impl>()) {
  if (EVP_MAC* mac = hmac_algorithm()) impl_->ctx = EVP_MAC_CTX_new(mac);
  char digest[] = "SHA256";
  OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0), OSSL_PARAM_construct_end()};
  // An empty key is legal HMAC but never a secret of ours; OpenSSL wants a non-null pointer.
  static const unsigned char none = 0;
  const auto* k = key.empty() ? &none : reinterpret_cast<const unsigned char*>(key.data());
  if (!impl_->ctx || EVP_MAC_init(impl_->ctx, k, key.size(), params) != 1)
    throw std::runtime_error("OpenSSL's HMAC-SHA256 is not available");
}

hmac_sha256::~hmac_sha256() = default;

void hmac_sha256::raw(const void* p, size_t n) {
  if (n && EVP_MAC_update(impl_->ctx, static_cast<const unsigned char*>(p), n) != 1)
    throw std::runtime_error("HMAC-SHA256 update failed");
}

hmac_sha256& hmac_sha256::put_u64(uint64_t v) {
  unsigned char b[8];
  for (int i = 0; i < 8; ++i) b[i] = static_cast<unsigned char>(v >> (8 * i));
  raw(b, sizeof b);
  return *this;
}

hmac_sha256& hmac_sha256::put_bytes(const void* p, size_t n) {
  put_u64(n);
  raw(p, n);
  return *this;
}

std::string hmac_sha256::finish() {
  std::string tag(32, '\0');
  size_t len = 0;
  if (EVP_MAC_final(impl_->ctx, reinterpret_cast<unsigned char*>(tag.data()), &len, tag.size()) != 1 || len != 32)
    throw std::runtime_error("HMAC-SHA256 final failed");
  return tag;
}

std::string link_proof(std::string_view secret, std::string_view role, std::string_view decode_nonce,
                       std::string_view prefill_nonce) {
  return hmac_sha256(secret).put(proof_label).put(role).put(decode_nonce).put(prefill_nonce).finish();
}

std::string link_session_key(std::string_view secret, std::string_view decode_nonce, std::string_view prefill_nonce) {
  return hmac_sha256(secret).put(session_label).put(decode_nonce).put(prefill_nonce).finish();
}

bool same_tag(std::string_view a, std::string_view b) {
  return !a.empty() && a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace fw
