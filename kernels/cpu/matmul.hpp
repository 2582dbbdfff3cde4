// matmul: y[m][n] = sum_k x[m][k] * w[n][k] for a weight matrix stored row-major in any supported
// GGUF type (rows of k elements, as ggml stores them: ne[0] = k, ne[1] = n). Activations are
// quantized once per call when the weight kernel wants 8-bit input. Work is split over output
// rows on the thread pool; every weight row is read once per call and reused for all m rows.
// Thread-safety: call from one thread; uses the pool.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/cpu/thread_pool.hpp"
#include "kernels/cpu/vec_dot.hpp"
#include "kernels/format/weight_view.hpp"

namespace fw::cpu {


/// Scratch memory reused across calls: the last quantized activations and what they came from.
struct matmul_scratch {
  std::vector<uint8_t> act;
  const float* act_of = nullptr;  ///< x of the last quantization (nullptr: none valid)
  int64_t act_m = 0, act_k = 0, act_ld = 0;
  const void* act_fn = nullptr;  ///< the quantizer that made them
  float act_scale = 0.f;
};

/// y (m rows, stride ldy) = x (m rows of w.k floats, stride ldx) times w^T.
/// same_x: the caller promises x is unchanged since the previous call with this scratch (q, k and
/// v of one input; gate and up): its 8-bit quantization is reused when it matches.
void matmul(const weight_view& w, const dot_kernel& kernel, const float* x, int64_t ldx, int64_t m,
            float* y, int64_t ldy, thread_pool& pool, matmul_scratch& scratch, bool same_x = false);

}  // namespace fw::cpu
