// step_result: what one decode step produced, the second value of a step (after step_plan):
// the tokens and text of every sequence that advanced, how many draft tokens each speculative
// sequence had accepted, which sequences finished, and which failed with which error. A
// failure concerns only its sequence: the others of the step advance normally.
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/base/expected.hpp"
#include "runtime/kv/kv_handle.hpp"
#include "runtime/sample/token_logprobs.hpp"

namespace fw {

/// One token (or the end) of one sequence.
struct step_event {
  uint64_t id = 0;
  int32_t token = -1;  ///< -1: none (EOS)
  std::string text;
  bool finished = false;
  std::string finish_reason;
  uint32_t generated = 0;  ///< tokens generated so far
  uint32_t cached_tokens = 0;  ///< the sequence's prompt tokens copied from the prefix cache
  // When the request asked for logprobs (sampling_params::logprobs >= 0) and token >= 0:
  bool has_logprob = false;
  float logprob = 0;                 ///< log p(token) under the model's raw distribution
  std::vector<int32_t> top_ids;      ///< the most likely alternatives, most likely first
  std::vector<float> top_logprobs;
  /// The sequence's first event, when the request scored its prompt (prompt_logprobs >= 0):
  /// prompt tokens 1.. given those before them.
  std::vector<token_logprobs> prompt_logprobs;
};

/// A sequence the step removed with an error (its KV is freed).
struct sequence_failure {
  uint64_t id = 0;
  error err;
};

/// A finished sequence's KV handed back instead of freed (batch_decoder::return_kv): the
/// tokens its cache holds (tokens.size() == kv.n_tokens), for a prefix cache to keep.
struct finished_kv {
  uint64_t id = 0;
  std::vector<int32_t> tokens;
  kv_handle kv;
};

struct step_result {
  std::vector<step_event> events;        ///< in row order, tokens of one sequence in sequence order
  std::vector<sequence_failure> failed;  ///< sequences that left the batch with an error
  std::vector<uint64_t> finished;        ///< sequences that ended normally (left the batch)
  std::vector<finished_kv> returned;     ///< their KV, when return_kv is on (else freed)
  std::vector<finished_kv> returned_failed;  ///< the failed ones' KV (no tokens), when return_kv is on
  /// Per sequence the draft was asked for this step: tokens proposed and accepted, or failed
  /// (the draft errored; the sequence stepped plainly).
  struct verdict {
    uint64_t id = 0;
    uint32_t drafted = 0;
    uint32_t accepted = 0;
    bool failed = false;
  };
  std::vector<verdict> verdicts;
  /// Remote drafting (the draft actor): per speculating sequence that advanced, the tokens its
  /// history gained this step (accepted drafts and the target's own) and the target's final hidden
  /// state at the newest token (empty unless the draft reads it). The draft hears the verdict from it.
  struct draft_feedback {
    uint64_t id = 0;
    std::vector<int32_t> appended;
    std::vector<float> hidden;
  };
  std::vector<draft_feedback> feedback;

  [[nodiscard]] bool empty() const { return events.empty() && failed.empty(); }
};

}  // namespace fw
