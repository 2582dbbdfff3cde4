// gptq: GPTQ rounding (Frantar et al., 2022). Round-to-nearest minimizes each weight's own error;
// GPTQ minimizes the product's output error on the calibration inputs: it quantizes a row's input
// channels one at a time and moves each rounding error onto the channels not yet quantized,
// weighted by the inverse of the input's second-moment matrix H = sum x x^T, so that correlated
// channels absorb it. Rows are independent given H, and run in tiles on the thread pool. 4-bit
// group parameters (scale and offset) are chosen when a group starts, from the weights as the
// earlier errors left them, with the importance-weighted clip search of quantize_rows.
// Thread-safety: pure functions; gptq_quantize_rows uses the given pool from one thread.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/cpu/thread_pool.hpp"
#include "kernels/format/ggml_type.hpp"
#include "runtime/base/expected.hpp"

namespace fw {

/// The upper-triangular U with U^T U = (H + damp * mean(diag H) * I)^-1 (k x k, row-major), the
/// factor GPTQ's updates read. A channel whose diagonal is 0 (never active) counts as H_jj = 1.
/// Error when H is not positive definite even after damping.
expected<std::vector<double>> gptq_inverse_factor(std::vector<double> h, int64_t k, double damp);

/// Whether gptq_quantize_rows takes `type` (the fw_w4a16 groups).
bool gptq_supports(ggml_type type);

/// Rows of k floats (w: n x k) in `type` with GPTQ's error feedback through u (from
/// gptq_inverse_factor). importance: per input channel, the mean square of the input (what the
/// group search weighs errors by); empty: all equal. order empty: the channels in their order,
/// each group's scale and offset chosen as it starts. Otherwise (act-order) the channels go in
/// `order` (a permutation of 0..k-1; u must then factor H permuted the same way, H'[i][j] =
/// H[order[i]][order[j]]) and every group is chosen first, from the weights before any update.
std::vector<uint8_t> gptq_quantize_rows(const std::vector<float>& w, int64_t k, ggml_type type,
                                        const std::vector<double>& u, const std::vector<float>& importance,
                                        cpu::thread_pool& pool, const std::vector<int32_t>& order = {});

}  // namespace fw
