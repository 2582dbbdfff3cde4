#include "runtime/spec/spec_gate.hpp"

#include <algorithm>

namespace fw {

void spec_gate::observe(bool drafted, uint64_t tokens, double ms, double draft_ms) {
  ++steps_in_phase_;
  if (drafted) {
    spec_tokens_ += tokens, spec_ms_ += ms, spec_draft_ms_ += draft_ms, ++spec_steps_;
    if (spec_steps_ >= c_.window) {
      spec_tps_ = spec_ms_ > 0 ? static_cast<double>(spec_tokens_) / spec_ms_ : 0;
      draft_share_ = spec_ms_ > 0 ? spec_draft_ms_ / spec_ms_ : 0;
      spec_tokens_ = 0, spec_ms_ = 0, spec_draft_ms_ = 0, spec_steps_ = 0;
    }
  } else {
    plain_tokens_ += tokens, plain_ms_ += ms, ++plain_steps_;
    if (plain_steps_ >= c_.window) {
      plain_tps_ = plain_ms_ > 0 ? static_cast<double>(plain_tokens_) / plain_ms_ : 0;
      plain_tokens_ = 0, plain_ms_ = 0, plain_steps_ = 0;
    }
  }
  decide();
}

void spec_gate::decide() {
  // A draft that costs next to nothing: speculation stays on (see the header).
  if (phase_ == phase::speculate && draft_share_ >= 0 && draft_share_ < c_.min_draft_share) return;
  switch (phase_) {
    case phase::speculate:
      // Measure plain decoding after the first window, then every recheck_every steps.
      if (spec_tps_ >= 0 && (plain_tps_ < 0 || steps_in_phase_ >= c_.recheck_every)) {
        phase_ = phase::probe_plain, steps_in_phase_ = 0;
        plain_tokens_ = 0, plain_ms_ = 0, plain_steps_ = 0;
      } else if (spec_tps_ >= 0 && plain_tps_ >= 0 && spec_tps_ < plain_tps_ * (1 - c_.tolerance) &&
                 steps_in_phase_ >= c_.window) {
        phase_ = phase::off, steps_in_phase_ = 0, ++offs_, ++failed_retries_;  // a retry lost again
      } else if (spec_tps_ >= 0 && steps_in_phase_ >= c_.window) {
        failed_retries_ = 0;
      }
      break;
    case phase::probe_plain:
      if (steps_in_phase_ >= c_.window) {
        steps_in_phase_ = 0;
        if (spec_tps_ >= plain_tps_ * (1 - c_.tolerance)) {
          phase_ = phase::speculate, failed_retries_ = 0;
        } else {
          phase_ = phase::off, ++offs_, ++failed_retries_;
        }
      }
      break;
    case phase::off:
      if (steps_in_phase_ >= c_.off_steps << std::min(std::max(failed_retries_ - 1, 0), 4)) {
        phase_ = phase::speculate, steps_in_phase_ = 0;
        spec_tokens_ = 0, spec_ms_ = 0, spec_draft_ms_ = 0, spec_steps_ = 0;
        spec_tps_ = -1;  // judge the new attempt on its own window
      }
      break;
  }
}

}  // namespace fw
