// quantizer: writes a model in another weight scheme (quant_scheme). For flywheel's calibrated
// schemes it works layer by layer on f32 copies of the weights: for each group of matrices that
// share an input (down, gate|up, wo, q|k|v, in that order, because down's scales fold into up's
// rows and wo's into v's), it measures the relative output error of the target format on the
// calibration rows (scale_search), tries activation-aware scales (SmoothQuant for 8-bit, an AWQ
// grid for 4-bit), keeps the best (plain round-to-nearest when nothing beats it), folds the
// inverse scales into the preceding operation and quantizes; with gptq, 4-bit groups are also
// rounded by GPTQ (gptq.hpp) and that is kept where it measures lower. Mixed precision picks W8A8 or
// W4A16 per group from a per-layer table or, under a size budget, from the measured
// sensitivity (the error a group gains per byte saved). Every choice and error is reported.
// Thread-safety: one call at a time; uses the given pool.
#pragma once

#include <atomic>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "kernels/cpu/thread_pool.hpp"
#include "runtime/base/expected.hpp"
#include "runtime/gguf/gguf_writer.hpp"
#include "runtime/model/model.hpp"
#include "runtime/quant/calibrator.hpp"
#include "runtime/quant/quant_scheme.hpp"

namespace fw {

struct quantize_options {
  quant_scheme scheme = quant_scheme::w8a8;
  int group = 128;                   ///< W4A16 group size: 32, 64 or 128
  bool activation_aware = true;      ///< AWQ (4-bit) / SmoothQuant (8-bit); false: round-to-nearest
  double alpha = 0.5;                ///< SmoothQuant migration strength; < 0: searched per product (0.1..0.9)
  bool static_activations = false;   ///< W8A8: one calibrated activation scale per tensor
  /// 4-bit: also GPTQ rounding (error feedback through the inverse Gram matrix of the
  /// calibration inputs) on the AWQ-scaled and the unscaled weights, kept where it measures a
  /// lower output error. Needs calibration statistics with Gram matrices.
  bool gptq = false;
  double gptq_damp = 0.01;           ///< GPTQ dampening: this share of H's mean diagonal is added to it
  /// GPTQ shrinkage: H's off-diagonal entries are multiplied by 1 - gptq_shrink (a shrinkage
  /// estimate of the input covariance towards its diagonal). A few thousand calibration tokens
  /// of short queries hold far fewer distinct directions than the inputs have channels; GPTQ
  /// fitted to the raw H moves error into the directions they miss, which other text uses.
  double gptq_shrink = 0.8;
  /// GPTQ act-order: the channels with the largest mean square input go first (while the most
  /// channels remain to take their error), each group's scale and offset chosen up front.
  bool gptq_act_order = true;
  std::optional<ggml_type> embd_type;  ///< token embedding (and an untied head); default per scheme
  uint64_t budget_bytes = 0;         ///< mixed: the size budget of the whole file's tensors
  std::vector<quant_scheme> layer_schemes;  ///< mixed: w8a8 or w4a16 per layer (instead of a budget)
  std::string source_name;           ///< recorded in the metadata
  std::function<void(uint32_t, uint32_t)> progress;  ///< (layers done, layers total)
  const std::atomic<bool>* cancel = nullptr;
};

/// What one product group got.
struct site_report {
  uint32_t layer = 0;
  std::string site;           ///< "qkv", "wo", "gate_up", "down"
  ggml_type type = ggml_type::f32;
  double error_rtn = -1;      ///< relative output error, round-to-nearest (-1: not measured)
  double error = -1;          ///< with the chosen scales
  std::string method = "rtn"; ///< "rtn", "smoothquant", "awq", "gptq", "awq+gptq"
  double alpha = 0;
  uint64_t bytes = 0;
};

struct quantize_result {
  std::vector<site_report> sites;
  uint64_t tensor_bytes = 0;  ///< all tensors written
  uint64_t matrix_params = 0, matrix_bytes = 0;  ///< the layers' matrices
  double bits_per_weight() const { return matrix_params ? 8.0 * static_cast<double>(matrix_bytes) / matrix_params : 0; }
};

/// Quantizes `src` (any supported weight types) into `out`: metadata, then tensors in the
/// source's order. `cal` holds calibration statistics of `src` (required for activation-aware
/// and mixed schemes, null otherwise). `out` gets every tensor declared, then begin_data, the
/// layers filled one at a time, and finish: give it stream_to(path) first and the output goes to
/// the file as it is made (memory holds one layer), else it stays in `out`'s memory.
expected<quantize_result> quantize_model(const model& src, const calibrator* cal, const calibration_summary* summary,
                                         const quantize_options& options, cpu::thread_pool& pool, gguf_writer& out);

}  // namespace fw
