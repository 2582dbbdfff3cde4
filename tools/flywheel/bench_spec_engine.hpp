// bench-spec --engine: plain and speculative decoding of one prompt set through the actor
// runtime, the way the console and the server decode: two engines on two backends of the same
// model, the speculative one with its draft actor beside the decode worker that verifies. Each
// prompt's plain and speculative runs alternate; the fastest of the reps counts. Decode time is a
// request's total minus its time to first token. At equal total cores: a draft with threads of its
// own ([speculative] draft_threads) takes them from the speculative target's (at least one stays). The draft actor's counters give the overlap:
// drafting the target waited for, drafting done ahead during verification, and the part of it
// that was used (hidden). A benchmark, not a test.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/base/expected.hpp"
#include "runtime/config/config.hpp"
#include "runtime/sample/sampling_params.hpp"
#include "runtime/setup/runtime_parts.hpp"

namespace fw::cli {

struct engine_set_result {
  double plain_ms = 0, spec_ms = 0;  ///< decode time, summed over the prompts (fastest rep each)
  uint64_t tokens = 0;               ///< tokens of the last rep
  double drafted = 0, accepted = 0, steps = 0;  ///< the speculative engine's counters over the last rep
  double draft_s = 0, ahead_s = 0, hidden_s = 0, ahead_hits = 0;
  bool identical = true;
  int target_threads = 0;  ///< the speculative target's kernel threads (the plain one has them all)
};

/// `spec` is the speculative configuration (draft, k, draft_threads); `verify_cost` the measured
/// cost table for k = auto.
expected<engine_set_result> bench_spec_engine_set(const runtime_parts& session, const config& spec,
                                                  const std::vector<std::vector<int32_t>>& prompts,
                                                  const sampling_params& params, int64_t reps,
                                                  const std::vector<double>& verify_cost);

}  // namespace fw::cli
