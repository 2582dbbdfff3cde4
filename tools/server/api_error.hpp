// api_error: an HTTP status plus OpenAI's error object
//   {"error": {"message": ..., "type": ..., "param": ..., "code": ...}}
// Bad input is a 4xx naming the field and what is allowed; only the server's own failures are 5xx.
// Thread-safety: plain value.
#pragma once

#include <string>

#include "runtime/base/expected.hpp"

namespace fw::server {

struct api_error {
  unsigned status = 400;
  std::string message;
  std::string type = "invalid_request_error";
  std::string param;  ///< the offending field; empty: null
  std::string code;   ///< e.g. "context_length_exceeded"; empty: null
  unsigned retry_after_s = 0;  ///< > 0: a Retry-After header (429, 503)

  /// The JSON body.
  [[nodiscard]] std::string body() const;
};

/// 400 invalid_request_error naming `param`.
[[nodiscard]] api_error bad_request(std::string message, std::string param = {}, std::string code = {});

/// The error a failed engine request answers with: invalid_argument, context_overflow,
/// out_of_memory (can never fit the pool) and unsupported are 400; overloaded is 429 with
/// Retry-After; timed_out 504; worker_failed 503; the rest 500.
[[nodiscard]] api_error from_engine_error(const fw::error& e, unsigned retry_after_s);

}  // namespace fw::server
