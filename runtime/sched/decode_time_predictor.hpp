// decode_time_predictor: the decode-time model of the two-level scheduler, t = a*L + b*N, fitted
// online by least squares from observed decode steps. A step over sequences with contexts L_i
// (prompt + generated tokens: what attention reads) on a model of N layers takes
// t = a * sum(L_i) + b * N * rows: a is the per-token cost of attention, b the per-layer cost of
// one sequence's row (weights, norms, MLP). Old steps fade with `forget` per step (1: never), so
// the fit follows a device that slows down. It is fitted once, by the decode worker that measures
// the steps (offload for time, [scheduler] offload_tpot_ms); the worker reports fit() with each
// step and the scheduler adopt()s it for admission ([scheduler] admission_tpot_ms: a new sequence
// joins only while the predicted step stays under the target) and shows it (`:stats`).
// Pure: no clock; callers pass what they measured. Thread-safety: none; one owner each.
#pragma once

#include <cstdint>

namespace fw {

/// A fitted model as a value: t = a * sum(L) + b * N * rows, fitted on `steps` steps (0: not fitted).
struct decode_time_fit {
  double a = 0, b = 0;
  uint64_t steps = 0;
};

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

  /// The fit as a value (steps 0 before fitted()): its one owner measures, others adopt it.
  [[nodiscard]] decode_time_fit fit() const { return fitted_ ? decode_time_fit{a_, b_, steps_} : decode_time_fit{}; }
  /// Uses another predictor's fit as this one's (a fit with no steps changes nothing).
  void adopt(const decode_time_fit& f) {
    if (f.steps == 0) return;
    a_ = f.a;
    b_ = f.b;
    steps_ = f.steps;
    fitted_ = true;
  }

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
