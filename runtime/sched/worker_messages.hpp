// The values the scheduler and its workers exchange, as plain runtime data (no CAF): a client's
// request, the jobs it hands out (prefill, KV transfer, decode) with their replies, and what a
// decode worker reports after a step. The actor protocols (actors/protocol/*) carry exactly these
// types; the scheduler (runtime/sched/scheduler) takes and makes them, so its tests build them by
// hand. KV handles inside move ownership with the value. Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/kv/kv_handle.hpp"
#include "runtime/sample/sampling_params.hpp"
#include "runtime/sample/token_logprobs.hpp"

namespace fw {

/// A generation request as the front door hands it to the scheduler.
struct client_request {
  uint64_t id = 0;  ///< chosen by the client, unique per engine
  std::vector<int32_t> prompt;
  sampling_params params;
};

// -- prefill worker --

struct prefill_job {
  uint64_t id = 0;
  std::vector<int32_t> tokens;  ///< tokens to write, starting at position kv.n_tokens
  kv_handle kv;
  uint32_t chunk = 0;  ///< prompt rows per forward; 0: [scheduler] prefill_chunk
  /// >= 0: score the prompt (sampling_params::prompt_logprobs): each row's next token, with this
  /// many alternatives; the last row's next token is next_token (< 0: the last row is not scored).
  int32_t prompt_logprobs = -1;
  int32_t next_token = -1;
  /// The tokens already in kv (a prefix-cache hit), so that a prefill node, which cannot see this
  /// node's cache, can be given the prompt whole.
  std::vector<int32_t> cached;
};

struct prefill_done {
  uint64_t id = 0;
  kv_handle kv;
  double ms = 0;                 ///< time spent in forward passes
  float attention_entropy = -1;  ///< of the last prefilled row's last layer; < 0: unknown
  double done_s = 0;             ///< steady-clock seconds when the prefill finished (prefill-to-decode latency)
  uint32_t chunks = 0;           ///< forward passes the prompt took
  uint32_t rows = 0;             ///< prompt rows they ran
  std::vector<token_logprobs> prompt_logprobs;  ///< a scoring job's: the tokens after its rows, in order
};

// -- transfer worker --

struct transfer_job {
  uint64_t id = 0;
  kv_handle from;      ///< tokens to move, in the pool of from.pool_id (the prefill or decode device's)
  kv_handle to;        ///< allocated in the destination pool (to.pool_id), written by the transfer
  uint8_t wire = 255;  ///< kv_wire of the stream; 255: [kv_cache] transfer (a degraded link: int8)
};

struct transfer_done {
  uint64_t id = 0;
  kv_handle from;
  kv_handle to;
  uint64_t bytes = 0;      ///< the stream's size
  uint64_t f32_bytes = 0;  ///< what the same tokens take as an f32 cache (the ratio's base)
  double ms = 0;           ///< encode + decode
  std::string error;       ///< empty: done
};

// -- decode worker --

struct decode_job {
  uint64_t id = 0;
  std::vector<int32_t> history;  ///< prompt tokens; all but the last are in kv
  sampling_params params;
  uint32_t budget = 0;  ///< tokens the sequence may generate
  kv_handle kv;
  float attention_entropy = -1;  ///< from the prefill, for the k policy; < 0: unknown
  double prefilled_s = 0;        ///< steady-clock seconds when its prefill finished; 0: unknown
  /// Re-admitted after a decode worker died: the tokens it had generated (and streamed) then.
  /// history + resumed minus the last token are in kv; the sequence carries on after them.
  std::vector<int32_t> resumed;
  uint32_t cached_tokens = 0;  ///< prompt tokens copied from the prefix cache, not computed (usage)
  /// Prompt scoring (sampling_params::prompt_logprobs): prompt tokens 1.. given those before them.
  std::vector<token_logprobs> prompt_logprobs;
};

/// The tokens one decode step produced: ids[i] generated tokens[i] (in order per sequence).
struct step_tokens {
  std::vector<uint64_t> ids;
  std::vector<int32_t> tokens;
  /// Sequences the draft was asked for this step, and whether it errored (the rollout breaker).
  std::vector<uint64_t> draft_ids;
  std::vector<uint8_t> draft_failed;
  /// The step itself, for the scheduler's decode-time model (the one fit): its seconds, the
  /// sequences it carried and the sum of their contexts (prompt + generated tokens); step_s 0:
  /// not a step of the decode device (the offload device's worker).
  double step_s = 0;
  uint32_t rows = 0;
  uint64_t sum_context = 0;
};

struct finished_ids {
  std::vector<uint64_t> ids;
  /// The sequences' KV handed back to the scheduler (the pools' one owner), each with the tokens
  /// it holds (parallel vectors; tokens empty for a cancelled one): it caches whole blocks of the
  /// decode pool's in the prefix cache and releases the rest.
  std::vector<kv_handle> kvs;
  std::vector<std::vector<int32_t>> kv_tokens;
};

/// Sequences a step failed, each with its error's kind (fw::errc) and message, and the KV handles
/// they held (the scheduler, the pools' one owner, releases them).
struct sequence_failures {
  std::vector<uint64_t> ids;
  std::vector<uint8_t> codes;
  std::vector<std::string> messages;
  std::vector<kv_handle> kvs;
};

}  // namespace fw
