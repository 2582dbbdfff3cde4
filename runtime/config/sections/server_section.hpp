// server_section: [server], the OpenAI-compatible HTTP server of `flywheel serve`. Read by
// tools/server. Thread-safety: plain value.
#pragma once

#include <cstdint>
#include <string>

namespace fw {

struct server_section {
  std::string host = "127.0.0.1";     ///< address to bind; 127.0.0.1 unless told otherwise
  uint32_t port = 8080;               ///< 0: any free port (printed at start)
  std::string model_name;             ///< the model id clients send and see; empty: the file's stem
  std::string api_key;                ///< empty: no key (then $FLYWHEEL_API_KEY, if set, is used)
  uint32_t max_body_kib = 1024;       ///< request bodies above this get 413
  double read_timeout_s = 10;         ///< headers + body must arrive within this (else 408)
  double idle_timeout_s = 60;         ///< an idle keep-alive connection is closed after this
  double write_timeout_s = 30;        ///< a client that stops reading is dropped (and cancelled)
  uint32_t max_connections = 1024;    ///< open connections; beyond: 503
  double shutdown_timeout_s = 30;     ///< on SIGTERM: in-flight requests get this long, then cancelled
  uint32_t retry_after_s = 1;         ///< Retry-After of a 429 (queue full)
  std::string tls_cert;               ///< PEM certificate chain: HTTPS (with tls_key); empty: plain HTTP
  std::string tls_key;                ///< PEM private key of tls_cert
  bool operator==(const server_section&) const = default;
};

}  // namespace fw
