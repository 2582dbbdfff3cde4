// decode_time_predictor: the decode-time model of the two-level scheduler, t = a*L + b*N, fitted
// online by least squares from observed decode steps. A step over sequences with contexts L_i
// (prompt + generated tokens: what attention reads) on a model of N layers takes
// t = a * sum(L_i) + b * N * rows: a is the per-token cost of attention, b the per-layer cost of
// one sequence's row (weights, norms, MLP). Old steps fade with `forget` per step (1: never), so
// the fit follows a device that slows down. The scheduler fits it, once, from the decode worker's
// step reports, and uses it for admission ([scheduler] admission_tpot_ms: a new sequence joins
// only while the predicted step stays under the target) and for offload for time ([scheduler]
// offload_tpot_ms), and shows it (`:stats`). Pure: no clock; callers pass what they measured.
// Thread-safety: none; one owner (the scheduler).
#pragma once

#include <cstdint>

namespace fw {

class decode_time_predictor {
 public:
  explicit decode_time_predictor(double forget = 0.995) : forget_(forget) {}

  /// One decode step: `rows` sequences whose contexts sum to `sum_context` tokens, on
  /// `n_layer` layers, took `seconds`.
  void observe(double sum_context, double rows, double n_layer, double seconds);

  /// True once the steps seen pin down both coefficients (contexts of more than one size).
  [[nodiscard]] bool fitted() const { return fitted_; }
  [[nodiscard]] double a() const { return a_; }  ///< seconds per context token
  [[nodiscard]] double b() const { return b_; }  ///< seconds per layer per sequence
  [[nodiscard]] uint64_t steps() const { return steps_; }

  /// Predicted seconds of one step over those sequences; 0 before fitted().
  [[nodiscard]] double step_seconds(double sum_context, double rows, double n_layer) const;
  /// How many sequences of `context` tokens may join a batch of `rows` sequences whose contexts
  /// sum to `sum_context` so that the predicted step stays within `target_s` (0 when even one
  /// would exceed it; large when not fitted: no opinion yet).
  [[nodiscard]] uint32_t room(double sum_context, double rows, double n_layer, double context, double target_s) const;

 private:
  double forget_;
  // Normal equations of the fit over x = (sum_context, n_layer * rows), y = seconds.
  double sxx_ = 0, sxz_ = 0, szz_ = 0, sxy_ = 0, szy_ = 0;
  double a_ = 0, b_ = 0;
  bool fitted_ = false;
  uint64_t steps_ = 0;
};

}  // namespace fw
