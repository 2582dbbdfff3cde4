// http_stream_client: the benchmarks' HTTP/1.1 client for OpenAI-compatible servers (flywheel's
// or another) on plain blocking sockets: a GET, and a streaming POST /v1/chat/completions that
// times the first token, each gap between tokens and the whole request. No TLS. A request still
// running at its deadline is abandoned (the connection closes, which cancels it on the server).
// Thread-safety: free functions; each call has its own connection.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/base/expected.hpp"

namespace fw::cli {

struct endpoint {
  std::string host;
  std::string port;
};

/// http://HOST:PORT[/...] -> its host and port; what is wrong otherwise (`flag` names it).
expected<endpoint> parse_endpoint(const std::string& url, const std::string& flag = "--server");

struct http_reply {
  int status = 0;  ///< 0: no response (refused, reset, timed out)
  std::string body;
};

/// GET path; waits at most timeout_s.
http_reply http_get(const endpoint& ep, const std::string& path, const std::string& api_key = {}, double timeout_s = 10);
/// POST body (JSON, may be empty) to path; waits at most timeout_s.
http_reply http_post(const endpoint& ep, const std::string& path, const std::string& body, const std::string& api_key = {},
                     double timeout_s = 10);

/// One streamed chat completion, timed from `start` (ms).
struct stream_result {
  int status = 0;
  bool ok = false;           ///< 200, [DONE] seen, at least one token of text
  bool abandoned = false;    ///< still running at the deadline
  double ttft_ms = 0, e2e_ms = 0;
  uint32_t tokens = 0;       ///< usage.completion_tokens (0 when the server does not say)
  uint32_t text_events = 0;  ///< chunks that carried text
  std::vector<double> gaps_ms;
  std::string error;         ///< the body of a refusal (first 200 bytes)
  std::string text;          ///< the streamed content, concatenated
  std::string finish_reason; ///< of the last choice chunk that had one
};

/// POSTs body (stream is set to true with usage) to /v1/chat/completions. `leave_after` > 0: the
/// client goes away (closes the connection, `abandoned`) once that many text chunks came.
stream_result stream_chat(const endpoint& ep, nlohmann::json body, const std::string& api_key,
                          std::chrono::steady_clock::time_point deadline, uint32_t leave_after = 0);

}  // namespace fw::cli
