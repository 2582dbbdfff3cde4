// The messages between clients, the front door and the scheduler: a client's request, the
// events streamed back to it, and a request's failure. Split from front_door_protocol.hpp
// because the scheduler's protocol needs them and the front door's protocol needs the scheduler.
#pragma once

#include <caf/actor_system_config.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "actors/protocol/runtime_inspect.hpp"
#include "runtime/sched/worker_messages.hpp"

// Inspectors of the runtime values this protocol carries (found by ADL in namespace fw).
namespace fw {

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, client_request& x) {
  return f(caf::meta::type_name("fw::actors::client_request"), x.id, x.prompt, x.params);
}

}  // namespace fw

namespace fw::actors {

// The runtime values this protocol carries, by their protocol names too.
using fw::client_request;


enum class stream_kind : uint8_t { token = 0, done = 1, error = 2 };

struct stream_event {
  uint64_t id = 0;
  uint8_t kind = 0;               ///< stream_kind
  std::vector<int32_t> tokens;    ///< token events: the new token(s)
  std::string text;               ///< token events: text safe to show
  // Token events of a request that asked for logprobs: one entry per token, and per token
  // sampling_params::logprobs alternatives (flattened, most likely first).
  std::vector<float> logprobs;
  std::vector<int32_t> top_ids;
  std::vector<float> top_logprobs;
  /// The first token event of a request that scored its prompt (prompt_logprobs >= 0): prompt
  /// tokens 1.. given those before them.
  std::vector<token_logprobs> prompt_logprobs;
  // Final events:
  std::string finish_reason;      ///< done: "stop" | "length"; error: the errc name
  uint8_t error_code = 0;         ///< error: the fw::errc
  std::string error;              ///< error: a clear message
  uint32_t prompt_tokens = 0;
  uint32_t completion_tokens = 0;
  uint32_t cached_tokens = 0;     ///< of prompt_tokens, those copied from the prefix cache
  double ttft_ms = 0;
  double tpot_ms = 0;             ///< mean time per output token after the first
  double total_ms = 0;

  /// The error of an error event.
  [[nodiscard]] fw::error failure() const { return {static_cast<errc>(error_code), error}; }
};

/// A request that failed: its error's kind (fw::errc) and message.
struct request_failure {
  uint64_t id = 0;
  uint8_t code = 0;
  std::string message;
};

/// A client's receiver of stream events.
using sink_actor = caf::typed_actor<caf::reacts_to<stream_event>>;

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, stream_event& x) {
  return f(caf::meta::type_name("fw::actors::stream_event"), x.id, x.kind, x.tokens, x.text, x.logprobs, x.top_ids,
           x.top_logprobs, x.prompt_logprobs, x.finish_reason,
           x.error_code, x.error, x.prompt_tokens, x.completion_tokens, x.cached_tokens, x.ttft_ms, x.tpot_ms, x.total_ms);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, request_failure& x) {
  return f(caf::meta::type_name("fw::actors::request_failure"), x.id, x.code, x.message);
}

inline void add_front_door_message_types(caf::actor_system_config& cfg) {
  cfg.add_message_type<client_request>("fw::actors::client_request");
  cfg.add_message_type<stream_event>("fw::actors::stream_event");
  cfg.add_message_type<request_failure>("fw::actors::request_failure");
  cfg.add_message_type<sink_actor>("fw::actors::sink_actor");
}

}  // namespace fw::actors
