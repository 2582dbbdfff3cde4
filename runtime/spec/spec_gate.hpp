// spec_gate: whether speculation pays on this decoder at all (pure decision code).
//
// The adaptive k policy judges each sequence by its acceptance rate, which says nothing about
// cost: a draft that is right half the time but costs as much as the target (a same-size
// quantized copy, a shallow layer-skip of a small model) still loses time. The gate measures what
// counts, output tokens per millisecond of wall time, on speculative steps and on plain steps of
// the same decoder, and turns drafting off while plain decoding is faster:
//
//   speculate  --(window spec steps)-->  probe plain  --(window plain steps)-->  compare
//   compare: spec tokens/ms >= plain tokens/ms * (1 - tolerance) -> speculate (re-probe plain
//            after recheck_every spec steps); else -> off for off_steps plain steps, then
//            speculate again for one window (the text may have become predictable). Each retry
//            that loses again doubles the off period (up to 16 x off_steps): a draft that never
//            pays costs one window now and then, not one every off_steps.
//
// Throughputs are means over each window (steps are short and noisy). Costs: a window of plain
// steps every recheck_every steps while speculation pays; a window of speculative steps every
// off_steps while it does not. A draft that costs next to nothing (n-gram lookup: drafting under
// min_draft_share of the step) is never gated: its only cost is verifying extra rows, which the
// per-sequence acceptance policy already weighs, and gating it would miss the bursts (a quoted
// passage) where it pays most.
// Thread-safety: a value; one per decoder.
#pragma once

#include <cstdint>

namespace fw {

struct spec_gate_config {
  int window = 6;            ///< steps per measurement (each mode)
  int recheck_every = 96;    ///< speculative steps between plain re-measurements
  int off_steps = 128;       ///< plain steps before speculation is tried again (doubling per failed retry)
  double tolerance = 0.03;   ///< speculation stays on unless this much slower than plain
  double min_draft_share = 0.1;  ///< drafts cheaper than this share of a step are never gated
};

class spec_gate {
 public:
  enum class phase : uint8_t { speculate, probe_plain, off };

  explicit spec_gate(spec_gate_config c = {}) : c_(c) {}

  /// Whether sequences may draft in the coming step.
  [[nodiscard]] bool allow_drafts() const { return phase_ == phase::speculate; }
  /// Records a finished step: whether any sequence drafted, the tokens it produced (all
  /// sequences), its wall time and the part of it spent drafting.
  void observe(bool drafted, uint64_t tokens, double ms, double draft_ms = 0);

  /// True during a speculative window whose throughput is not measured yet (the first one, or a
  /// retry after an off period): the decoder drafts its cheapest proposal (one token) then, so
  /// a draft that does not pay costs little to re-judge.
  [[nodiscard]] bool trial() const { return phase_ == phase::speculate && spec_tps_ < 0; }
  [[nodiscard]] phase current() const { return phase_; }
  [[nodiscard]] double spec_tokens_per_ms() const { return spec_tps_; }
  [[nodiscard]] double plain_tokens_per_ms() const { return plain_tps_; }
  [[nodiscard]] uint64_t times_turned_off() const { return offs_; }

 private:
  void decide();

  spec_gate_config c_;
  phase phase_ = phase::speculate;
  int steps_in_phase_ = 0;
  // Current measurement windows (the last `window` steps of each kind).
  uint64_t spec_tokens_ = 0, plain_tokens_ = 0;
  double spec_ms_ = 0, plain_ms_ = 0, spec_draft_ms_ = 0;
  double draft_share_ = -1;  ///< drafting's share of speculative steps (last window); < 0: unknown
  int spec_steps_ = 0, plain_steps_ = 0;
  double spec_tps_ = -1, plain_tps_ = -1;  ///< < 0: not measured yet
  uint64_t offs_ = 0;
  int failed_retries_ = 0;  ///< retries in a row that measured slower than plain
};

}  // namespace fw
