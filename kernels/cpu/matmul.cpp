#include "kernels/cpu/matmul.hpp"

#include <algorithm>

namespace fw::cpu {
namespace {
// From this many activation rows a product counts as prefill-sized (long ranges a thread).
constexpr int64_t prefill_rows = 64;
}  // namespace

void matmul(const weight_view& w, const dot_kernel& kernel, const float* x, int64_t ldx, int64_t m,
            float* y, int64_t ldy, thread_pool& pool, matmul_scratch& scratch, bool same_x) {
  const void* act = x;
  size_t act_stride = static_cast<size_t>(ldx) * sizeof(float);
  if (kernel.act != act_format::f32) {
    act_stride = act_row_bytes(kernel.act, w.k);
    const void* quant = kernel.act == act_format::q8x ? reinterpret_cast<const void*>(kernel.quantize)
                                                      : reinterpret_cast<const void*>(kernel.quantize_row);
    const bool reuse = same_x && scratch.act_of == x && scratch.act_m == m && scratch.act_k == w.k &&
                       scratch.act_ld == ldx && scratch.act_fn == quant && scratch.act_scale == w.act_scale;
    if (!reuse) {
      scratch.act.resize(act_stride * m);
      uint8_t* q = scratch.act.data();
      pool.parallel_for(m, 8, [&](int64_t b, int64_t e, int) {
        for (int64_t r = b; r < e; ++r) {
          if (kernel.act == act_format::q8x)
            kernel.quantize(x + r * ldx, reinterpret_cast<block_q8x*>(q + r * act_stride), w.k);
          else
            kernel.quantize_row(x + r * ldx, q + r * act_stride, w.k, w.act_scale);
        }
      });
      scratch.act_of = x, scratch.act_m = m, scratch.act_k = w.k, scratch.act_ld = ldx, scratch.act_fn = quant;
      scratch.act_scale = w.act_scale;
    }
    act = scratch.act.data();
  }
  const auto* a = static_cast<const uint8_t*>(act);
  if (w.packed) {
    // Tasks own whole groups of packed rows (one SIMD lane per row inside a group). Decode-sized
    // products (a few activation rows: tens of microseconds a thread) are split in one contiguous
    // range per thread: each thread streams its weights in order, and the caller still takes a
    // range that a late worker has not claimed. Eight interleaved ranges cost 3-5% of decode
    // (2-core EPYC, SmolLM2 Q4_1: tg64 and 16-row steps, 2026-12-06). Prefill products keep four
    // ranges a thread so that a thread slowed by other work is balanced.
    const int64_t g = packed_group_rows;
    const int64_t groups = (w.n + g - 1) / g;
    const int ranges_per_thread = m >= prefill_rows ? 4 : 1;
    pool.parallel_for(groups, 1, [&](int64_t b, int64_t e, int) {
      const int64_t r0 = b * g, r1 = std::min(w.n, e * g);
      kernel.packed_gemm(w.k, w.data + r0 * w.row_bytes, r1 - r0, a, act_stride, m, y + r0, ldy);
    }, ranges_per_thread);
    return;
  }
  // Blocks of output rows per task; within a block the path's gemm reuses each loaded weight for
  // every activation row (verification and batched decode cost little more than one row).
  const int64_t grain = 16;
  pool.parallel_for(w.n, grain, [&](int64_t b, int64_t e, int) {
    constexpr int64_t tile = 64;
    for (int64_t n0 = b; n0 < e; n0 += tile) {
      const int64_t n1 = std::min(e, n0 + tile);
      if (m == 1) {
        kernel.gemv(w.k, w.data + n0 * w.row_bytes, w.row_bytes, n1 - n0, a, y + n0);
      } else {
        kernel.gemm(w.k, w.data + n0 * w.row_bytes, w.row_bytes, n1 - n0, a, act_stride, m, y + n0, ldy);
      }
    }
  });
}

}  // namespace fw::cpu
