// link_tls: the node link's TLS ([node] tls_cert / tls_key / tls_ca): which files, and the check
// that they make a usable mutual-TLS identity before the network layer reads them.
//   With TLS on, CAF's OpenSSL module (libcaf_openssl) carries the node link: each node presents
//   tls_cert (a PEM chain) with tls_key, and accepts a peer only when the peer's certificate is
//   signed by a CA in tls_ca (mutual TLS, TLS 1.2 or later); the prompts and KV are encrypted on
//   the wire. It composes with the shared secret (link_auth): TLS hides and authenticates the
//   channel by certificates, the secret proves the peer a flywheel node of this deployment.
//   CAF reads the files at each connection and throws from its network thread when one is
//   unreadable, so check_link_tls runs at start and names the file and what is wrong with it.
// OpenSSL's libssl. Pure apart from reading the files and the clock (certificate validity).
// Thread-safety: free functions.
#pragma once

#include <string>

#include "runtime/base/expected.hpp"

namespace fw {

struct link_tls {
  std::string cert;  ///< PEM certificate chain this node presents
  std::string key;   ///< PEM private key of cert (unencrypted)
  std::string ca;    ///< PEM certificates of the CAs a peer's certificate must be signed by
  bool enabled() const { return !cert.empty(); }
  bool operator==(const link_tls&) const = default;
};

/// Refuses, naming the key and file: an unreadable or non-PEM file, a key that is not cert's, a
/// CA file with no certificate, a certificate that is expired or not yet valid, and a certificate
/// that tls_ca does not verify (each node checks its peers with its own tls_ca, so a node whose
/// own certificate fails it would refuse, and be refused by, nodes configured like it).
expected<void> check_link_tls(const link_tls& tls);

}  // namespace fw
