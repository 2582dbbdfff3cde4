// scale_search: activation-aware scaling of the matrices that share one input (q|k|v, gate|up,
// down, wo). Scaling input channel j of the weights by s_j and the input by 1 / s_j leaves the
// product unchanged in exact arithmetic; chosen well, it moves activation outliers into the
// weights (SmoothQuant, for int8 activations) or gives the salient channels more of the 4-bit
// grid (AWQ). The 1 / s is folded into the operation that made the input (an RMSNorm weight, the
// rows of up or v), so inference pays nothing. error_meter measures what a choice costs: the
// relative output error of the real kernel (weights in the target format, activations quantized
// as that kernel does) on calibration rows. Thread-safety: error_meter uses the given pool from
// one thread.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/cpu/thread_pool.hpp"
#include "kernels/format/ggml_type.hpp"

namespace fw {

/// Matrices (row-major, rows of k floats) that multiply one input.
struct product_group {
  std::vector<const std::vector<float>*> weights;
  int64_t k = 0;
};

class error_meter {
 public:
  /// x: rows calibration input rows of g.k floats. The reference outputs are computed here.
  error_meter(const product_group& g, const float* x, int64_t rows, cpu::thread_pool& pool);

  /// sum ||Y - Y_q||^2 / sum ||Y||^2 over the group's matrices, where Y_q uses the weights
  /// scaled by s (empty: no scaling) and quantized to `type`, and the input divided by s;
  /// act_scale > 0: static int8 activations (fw_w8a8). Per matrix in `per_matrix` when given.
  /// clip_search: quantize with the importance-weighted clip search (4-bit).
  double error(const std::vector<float>& s, ggml_type type, float act_scale = 0.f, bool clip_search = false,
               std::vector<double>* per_matrix = nullptr);
  /// The same for given quantized weights (q[i]: the group's i-th matrix, scaled by s, in `type`).
  double error_of(const std::vector<float>& s, ggml_type type, const std::vector<std::vector<uint8_t>>& q,
                  float act_scale = 0.f, std::vector<double>* per_matrix = nullptr);
  /// The importance quantize_rows uses for this input scaled by s (mean square of x / s).
  std::vector<float> importance(const std::vector<float>& s) const;

 private:
  const product_group& g_;
  const float* x_;
  int64_t rows_;
  cpu::thread_pool& pool_;
  std::vector<std::vector<float>> y_ref_;
  std::vector<double> ref_norm_;
};

/// SmoothQuant: s_j = max|x_j|^alpha / max_i |w_ij|^(1 - alpha), clamped to [1e-3, 1e3].
std::vector<float> smoothquant_scales(const std::vector<float>& x_max, const product_group& g, double alpha);
/// AWQ: s_j = mean|x_j|^alpha, normalized so that max(s) * min(s) = 1.
std::vector<float> awq_scales(const std::vector<float>& x_mean, double alpha);
/// Channels c and c' whose scale must be equal (wo's input channels of the heads sharing one KV
/// head: the 1 / s folds into v's rows) get their geometric mean. head_dim dims per head, gqa
/// query heads per KV head.
void tie_to_kv_heads(std::vector<float>& s, int64_t head_dim, int64_t gqa);
/// W[:, j] *= s_j for every row (s empty: nothing).
void scale_columns(std::vector<float>& w, int64_t k, const std::vector<float>& s);
/// Quantizes rows of k floats to `type` (reference quantizers). With `importance` (per input
/// channel: the mean square of its activations), each 4-bit group also searches its clipping
/// ratio (1.0 down to 0.75) for the least importance-weighted squared error, AWQ's clip search
/// in its diagonal form, and refits each candidate's scale and offset by importance-weighted
/// least squares on its rounded values (re-rounding twice; measured on SmolLM2-135M: +15% ->
/// +9.7% perplexity on 4 chunks).
std::vector<uint8_t> quantize_rows(const std::vector<float>& w, int64_t k, ggml_type type,
                                   const std::vector<float>* importance = nullptr);
/// One 4-bit group of g <= 128 floats (fw_w4a16 layout) with the least importance-weighted
/// squared error over the clip ratios and their least-squares refits (what quantize_rows does
/// per group when given an importance).
void quantize_w4_group_weighted(const float* src, int g, const float* imp, uint8_t* dst);
/// Mean over rows of ||W x||^2 / ||r||^2, where x (rows of k floats) are a product's input rows
/// and r (rows of r_width floats) the residual stream after the layer for the same tokens: the
/// share of the stream that the product W (row-major, k columns) writes. A relative error e in
/// W's output (or in what feeds it) perturbs the stream by about e times this share, so products
/// compare on what the model downstream sees; rows whose stream is huge (attention-sink tokens)
/// weigh little, as they should. Rows whose stream is zero count 0.
double residual_share(const std::vector<float>& w, int64_t k, const float* x, const float* r, int64_t r_width,
                      int64_t rows, cpu::thread_pool& pool);
/// Mean square per channel of rows x width floats, divided by s_j^2 (the scaled input).
std::vector<float> channel_mean_square(const float* x, int64_t rows, int64_t width, const std::vector<float>& s);

}  // namespace fw
