// openai_service: the routes of `flywheel serve` on one engine.
//   POST /v1/completions, POST /v1/chat/completions   (JSON or SSE when stream = true)
//   GET /v1/models, GET /health, GET /metrics          (Prometheus text)
//   POST /tokenize, POST /detokenize                   (vLLM's: a prompt or chat messages -> ids, ids -> text)
// A generation request is checked (openai_request), tokenized (chat: the model's template with
// message text never parsed for control tokens), checked against the context window, and
// submitted to the engine (continuous batching, speculation, plugins): one engine request per
// choice (a batch of completions prompts x n). A prompt's first choice is submitted at once, its
// others when the first one's prefill is done (its first event), so they copy the prompt's KV
// from the prefix cache instead of recomputing it. With a seed, choice j samples with seed + j.
// Events come back on CAF threads and are moved to the HTTP I/O thread, where all per-request
// state lives.
// The response starts when the first event arrives: an engine refusal (queue full: 429 with
// Retry-After) is then still a proper status even for a stream. A client that disconnects cancels
// its request, which frees its KV blocks.
// Auth: with an API key, /v1/*, /tokenize and /detokenize need "Authorization: Bearer KEY" (compared in constant time);
// /health and /metrics stay open (probes and scrapers), as in vLLM. /admin/* (admin_routes) needs
// the key, and is off (403) when no key is set.
// Drain (SIGTERM): new generation requests get 503; in_flight() counts the running ones;
// cancel_all() cancels them.
// Thread-safety: handle() runs on the I/O thread; begin_drain/in_flight/cancel_all from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "actors/engine.hpp"
#include "runtime/config/config.hpp"
#include "runtime/metrics/metrics_registry.hpp"
#include "tools/server/admin_routes.hpp"
#include "tools/server/alert_monitor.hpp"
#include "tools/server/http_server.hpp"
#include "tools/server/openai_request.hpp"

namespace fw::server {

struct service_options {
  std::string model_name;  ///< the id of /v1/models and the "model" field
  std::string api_key;     ///< empty: no auth
  uint32_t n_ctx = 0;      ///< tokens per sequence
  unsigned retry_after_s = 1;
  sampling_params defaults;
  alerts_section alerts;
  admin_options admin;
};

class openai_service {
 public:
  /// `post` runs a function on the HTTP I/O thread (http_server::post).
  openai_service(actors::engine& engine, service_options options, std::function<void(std::function<void()>)> post);
  ~openai_service();

  void handle(http_request req, std::shared_ptr<reply_channel> reply);

  void begin_drain() { draining_ = true; }
  size_t in_flight() const { return in_flight_.load(); }
  /// Cancels every running request (their clients get a final error / finish_reason).
  void cancel_all();

  /// /metrics: the engine's series, the server's HTTP counters and the alerts.
  std::string metrics_text();

 private:
  struct choice;
  struct response;
  /// Where an engine request's events go: its response and the choice's index there.
  struct choice_ref {
    std::shared_ptr<response> r;
    uint32_t index = 0;
  };
  void generate(const http_request& req, std::shared_ptr<reply_channel> reply, bool chat);
  /// POST /tokenize (detokenize false) or /detokenize.
  void tokenize(const http_request& req, reply_channel& reply, bool detokenize);
  void submit_choice(const std::shared_ptr<response>& r, uint32_t index);
  /// The prompt's other choices, once its first one has an event.
  void submit_rest(const std::shared_ptr<response>& r, uint32_t index);
  void on_event(uint64_t id, const actors::stream_event& e);
  void choice_done(response& r, uint32_t index, const actors::stream_event& e);
  void fail(response& r, const actors::stream_event& e);
  void complete(response& r);
  void reply_error(reply_channel& reply, const api_error& e, const char* route);
  bool authorized(const http_request& req) const;
  std::string chunk(const response& r, uint32_t index, const std::string& text, const std::vector<int32_t>& ids,
                    const char* finish_reason, const nlohmann::json* logprobs = nullptr,
                    const nlohmann::json* tool_calls = nullptr) const;
  void count_response(const char* route, unsigned status);

  actors::engine& engine_;
  service_options opt_;
  std::function<void(std::function<void()>)> post_;
  std::atomic<bool> draining_{false};
  std::atomic<size_t> in_flight_{0};
  std::unordered_map<uint64_t, choice_ref> live_;  // engine request id -> its choice; I/O thread only
  alert_monitor alerts_;
  admin_routes admin_;
  int64_t created_ = 0;
  uint64_t next_response_ = 1;
};

}  // namespace fw::server
