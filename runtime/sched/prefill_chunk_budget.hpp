// prefill_chunk_budget: sizes the prefill chunks of a device that also decodes, so that a decode
// step waits behind at most `target` seconds of prefill ([scheduler] prefill_chunk_ms; vLLM's
// per-step token budget, in time rather than tokens). A chunk of n prompt rows starting at
// position p is modelled as t = c + b*n + a*(n*p + n*(n+1)/2): a fixed cost per forward (the
// weights are read once per forward), a cost per row (projections, MLP) and a cost per attended
// token (attention reads every earlier position). The three coefficients are fitted online by
// least squares from the chunks the device ran, with forgetting (`forget` per chunk), so the
// chunks shrink as a long prompt's context grows and follow a device that slows down. Until
// the fit is usable the chunk is `first_chunk` tokens. Pure: no clock; callers pass what they
// measured (the forward's own compute time, not its wait at the device's gate).
// Thread-safety: none; one owner (a prefill worker).
#pragma once

#include <cstdint>

namespace fw {

class prefill_chunk_budget {
 public:
  struct limits {
    double target_s = 0;          ///< a chunk's predicted time stays within this; <= 0: off
    uint32_t max_chunk = 512;     ///< never more rows ([scheduler] prefill_chunk)
    uint32_t min_chunk = 16;      ///< never fewer (a forward's fixed cost is paid per chunk)
    uint32_t first_chunk = 32;    ///< before the fit is usable
  };
  explicit prefill_chunk_budget(limits l, double forget = 0.98) : lim_(l), forget_(forget) {}

  /// A chunk of n rows at positions [start, start + n) took `seconds` of compute.
  void observe(uint32_t start, uint32_t n, double seconds);
  /// Rows of the next chunk, which starts at `start` with `left` rows of the prompt to go.
  [[nodiscard]] uint32_t next(uint32_t start, uint64_t left) const;
  /// Predicted seconds of a chunk of n rows at `start`; < 0 before the fit is usable.
  [[nodiscard]] double predict(uint32_t start, uint32_t n) const;
  [[nodiscard]] bool fitted() const { return fitted_; }
  [[nodiscard]] uint64_t chunks() const { return chunks_; }
  [[nodiscard]] const limits& bounds() const { return lim_; }

 private:
  limits lim_;
  double forget_;
  // Normal equations over x = (1, n, attended tokens), y = seconds: s_[i][j] = sum x_i x_j, r_[i] = sum x_i y.
  double s_[3][3] = {};
  double r_[3] = {};
  double c_ = 0, b_ = 0, a_ = 0;
  bool fitted_ = false;
  uint64_t chunks_ = 0;
};

}  // namespace fw
