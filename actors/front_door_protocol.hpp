// Protocol of the front door, the actor clients talk to:
//   (generate_atom, client_request, caf::actor sink)  start a request; events go to `sink`
//   (cancel_atom, uint64_t id)                         cancel it (also when the sink dies)
//   (shutdown_atom)                                    fail what is in flight, stop everything
// The sink receives stream_event messages: any number of token events, then exactly one final
// event (done or error). Internally it receives (step_atom, step_batch) from the decode actor and
// (fail_atom, request_failure) from the scheduler and splits them per request.
#pragma once

#include <caf/atom.hpp>
#include <caf/meta/type_name.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "actors/runtime_inspect.hpp"

namespace fw::actors {

using generate_atom = caf::atom_constant<caf::atom("generate")>;
using fail_atom = caf::atom_constant<caf::atom("fail")>;
using shutdown_atom = caf::atom_constant<caf::atom("shutdown")>;
using stats_atom = caf::atom_constant<caf::atom("stats")>;

struct client_request {
  uint64_t id = 0;                ///< chosen by the client, unique per engine
  std::vector<int32_t> prompt;
  sampling_params params;
};

enum class stream_kind : uint8_t { token = 0, done = 1, error = 2 };

struct stream_event {
  uint64_t id = 0;
  uint8_t kind = 0;               ///< stream_kind
  std::vector<int32_t> tokens;    ///< token events: the new token(s)
  std::string text;               ///< token events: text safe to show
  // Final events:
  std::string finish_reason;      ///< done: "stop" | "length"; error: the errc name
  std::string error;              ///< error: a clear message
  uint32_t prompt_tokens = 0;
  uint32_t completion_tokens = 0;
  double ttft_ms = 0;
  double tpot_ms = 0;             ///< mean time per output token after the first
  double total_ms = 0;
};

struct request_failure {
  uint64_t id = 0;
  std::string code;
  std::string message;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, client_request& x) {
  return f(caf::meta::type_name("fw::actors::client_request"), x.id, x.prompt, x.params);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, stream_event& x) {
  return f(caf::meta::type_name("fw::actors::stream_event"), x.id, x.kind, x.tokens, x.text, x.finish_reason,
           x.error, x.prompt_tokens, x.completion_tokens, x.ttft_ms, x.tpot_ms, x.total_ms);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, request_failure& x) {
  return f(caf::meta::type_name("fw::actors::request_failure"), x.id, x.code, x.message);
}

}  // namespace fw::actors
