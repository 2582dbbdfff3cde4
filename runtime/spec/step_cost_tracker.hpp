// step_cost_tracker: what a forward over r rows costs relative to one row, learned from the
// decoder's own steps (pure: fed each forward's compute time, it reads no clock). The start-up
// calibration (calibrate_verify_cost) times a few forwards in isolation, where the weights are
// warm and nothing else runs; in a running decode the extra rows measured dearer (a 2-core
// AVX-512 host: a 3-row step 1.31x a 1-row step in situ against 1.23x calibrated), and k = auto,
// priced by the calibration alone, drafted more than paid. The decoder lays the measured ratios
// over the calibration now and then (k_policy::set_verify_cost).
// Thread-safety: a value; one decoder owns it.
#pragma once

#include <span>
#include <vector>

namespace fw {

class step_cost_tracker {
 public:
  /// Tracks forwards of 1 .. max_rows rows; alpha: weight of the newest time in each row count's
  /// moving average; a row count counts once it has min_samples times.
  explicit step_cost_tracker(int max_rows = 9, double alpha = 0.1, int min_samples = 8);

  /// One forward over `rows` rows took `seconds` (rows outside 1 .. max_rows, or a time <= 0, are
  /// ignored). Once a row count is measured, a time beyond 2x (or below half) its average is
  /// clipped there: a step the OS preempted must not move the average much.
  void observe(int rows, double seconds);

  /// prior[r - 1]: the calibrated cost of r rows (prior[0] = 1). With at least two row counts
  /// measured, each measured r gets prior[a - 1] * time(r) / time(a), a being the fewest rows
  /// measured (1 when plain one-row steps occur, else the batch's own plain step); an unmeasured
  /// r above a keeps the calibration's shape from the nearest measured row below it (prior[r - 1]
  /// times that row's measured / calibrated ratio); then every cost is raised to at least the one
  /// before it (more rows never cost less). Else the prior unchanged. The result has the prior's
  /// length.
  std::vector<double> costs(std::span<const double> prior) const;

  /// Observations of r rows so far (0 outside 1 .. max_rows).
  int samples(int rows) const;

 private:
  struct row_stat {
    double avg = 0;
    int n = 0;
  };
  std::vector<row_stat> by_rows_;  ///< [rows - 1]
  double alpha_;
  int min_samples_;
};

}  // namespace fw
