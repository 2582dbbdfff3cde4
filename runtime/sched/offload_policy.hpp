// offload_policy: which long-tail sequences leave the decode device for the offload device, as
// pure code (no clock, no actors). A sequence qualifies once it has generated more than
// min_generated tokens, and sequences move
//  - for memory, while the decode device's KV pool has less than max_free_share of its blocks
//    free, or
//  - for time (max_step_s > 0), while the decode step the decode-time predictor expects for the
//    batch as it is exceeds max_step_s: each move takes its own share (a * context + b * layers)
//    off the prediction, so the longest contexts go until the rest fits (the short requests'
//    time per output token is what this protects);
// the longest generations go first, at most max_moves per decision, and only while the offload
// pool can hold a candidate's worst case (its tokens plus what it may still generate). The decode
// worker asks after every step. Tested with fabricated inputs.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <vector>

namespace fw {

struct offload_limits {
  uint32_t min_generated = 512;  ///< generated tokens before a sequence may move
  double max_free_share = 0.25;  ///< move only while the decode pool's free share is below this
  uint32_t max_moves = 1;        ///< sequences moved per decision
  /// Also move while the predicted decode step exceeds this many seconds; 0: off.
  double max_step_s = 0;
};

/// The decode device's step as its decode_time_predictor sees it (all zero: not fitted yet).
struct offload_step {
  double predicted_s = 0;  ///< the step predicted for the batch as it is
  double per_token_s = 0;  ///< a: seconds per context token
  double per_row_s = 0;    ///< b * layers: seconds per sequence's row
};

struct offload_candidate {
  uint64_t id = 0;
  uint32_t generated = 0;   ///< tokens generated so far
  uint32_t kv_tokens = 0;   ///< tokens in its KV now
  uint32_t remaining = 0;   ///< tokens it may still generate
};

/// The ids to move now, longest generations first.
std::vector<uint64_t> choose_offload(std::vector<offload_candidate> candidates, double decode_free_share,
                                     uint32_t offload_free_blocks, uint32_t block_tokens, const offload_limits& limits,
                                     const offload_step& step = {});

}  // namespace fw
