// link_auth: what proves that two flywheel nodes share a secret ([node] secret_file, or the
// FLYWHEEL_NODE_SECRET environment variable), and what seals each message between them.
//   The handshake (actors/protocol/node_protocol.hpp) is a mutual challenge-response: the decode
//   node sends a fresh nonce Nd, the prefill node answers with its own fresh nonce Np and
//   link_proof(secret, "prefill", Nd, Np); the decode node checks it and answers
//   link_proof(secret, "decode", Nd, Np). Neither proof can be replayed (the other side's nonce
//   is new each time) or reflected (the role is in the proof). Both then derive the session key
//   link_session_key(secret, Nd, Np), which seals each job, KV chunk and reply (HMAC-SHA256 over
//   its fields), so a node that only claims an accepted peer's identity cannot send prompts and
//   a forged KV chunk is dropped. The secret itself never crosses the network.
// Not secrecy: without TLS ([node] tls_*, runtime/net/link_tls) the prompts and KV travel in the
// clear; this is authentication and integrity against anyone without the secret.
// OpenSSL's libcrypto (HMAC-SHA256, RAND_bytes, CRYPTO_memcmp). Pure apart from the randomness.
// Thread-safety: free functions; an hmac_sha256 object belongs to one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "runtime/base/expected.hpp"

namespace fw {

/// The fewest bytes a secret may have (a secret shorter than a SHA-256 block's worth of entropy
/// is refused rather than trusted).
inline constexpr size_t link_secret_min_bytes = 16;

/// The node's secret: the file's contents (trailing whitespace trimmed), else `env_value`
/// (FLYWHEEL_NODE_SECRET; null or empty: none), else "" (the link is unauthenticated). Refused:
/// an unreadable file, an empty or short secret. A file that others may read is logged.
expected<std::string> load_link_secret(const std::string& secret_file, const char* env_value);

/// 32 bytes from the operating system's random source (OpenSSL RAND_bytes).
std::string make_nonce();

/// HMAC-SHA256, fed piece by piece. Each put_* frames its value (fixed width or length-prefixed),
/// so two different field lists never hash the same bytes.
class hmac_sha256 {
 public:
  explicit hmac_sha256(std::string_view key);
  ~hmac_sha256();
  hmac_sha256(const hmac_sha256&) = delete;
  hmac_sha256& operator=(const hmac_sha256&) = delete;

  hmac_sha256& put_u64(uint64_t v);
  hmac_sha256& put_bytes(const void* p, size_t n);  ///< length-prefixed
  hmac_sha256& put(std::string_view s) { return put_bytes(s.data(), s.size()); }
  std::string finish();  ///< the 32-byte tag; the object is spent

 private:
  void raw(const void* p, size_t n);
  struct impl;
  std::unique_ptr<impl> impl_;
};

/// A side's answer to the challenge: HMAC(secret, label, role, decode nonce, prefill nonce).
std::string link_proof(std::string_view secret, std::string_view role, std::string_view decode_nonce,
                       std::string_view prefill_nonce);

/// The key both sides seal the session's messages with.
std::string link_session_key(std::string_view secret, std::string_view decode_nonce, std::string_view prefill_nonce);

/// Constant-time comparison of two tags; an empty tag never matches.
bool same_tag(std::string_view a, std::string_view b);

}  // namespace fw
