// draft_ask / draft_answer: a proposal asked of a draft that runs elsewhere (the draft actor,
// runtime/spec/drafts/draft_pipeline.hpp) and its answer. Thread-safety: plain values.
#pragma once

#include <cstdint>

#include "runtime/kv/kv_handle.hpp"
#include "runtime/spec/drafts/drafter.hpp"

namespace fw {

/// A sequence whose proposal is asked of a draft run elsewhere (the draft actor): up to k tokens.
struct draft_ask {
  uint64_t id = 0;
  int32_t k = 0;
  /// The target's KV handle, lent for this ask only (the asker waits for the answer): a draft
  /// that runs the target's own layers (layer-skip) reads it and leaves it as it found it.
  kv_handle* target_kv = nullptr;
};

/// The draft actor's answer for one ask: a proposal, or why there is none.
struct draft_answer {
  uint64_t id = 0;
  draft_proposal proposal;
  bool failed = false;  ///< the draft errored: this step is plain
  bool gone = false;    ///< the draft does not know the sequence (begin refused, restarted): plain from now on
};

}  // namespace fw
