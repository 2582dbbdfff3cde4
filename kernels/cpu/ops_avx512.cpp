// AVX-512F element-wise ops (compiled with -mavx512*; selected only when CPUID has AVX-512).
// 16 floats per step; the last n % 16 go through masked loads / stores, so nothing is read or
// written past the end. Reductions keep several vector accumulators so the adds overlap and sum
// in another order than the scalar reference (differences are float rounding, tested).
//
// GCC 12's AVX-512 headers build "undefined" vectors as `__m512 __Y = __Y;`, which
// -W(maybe-)uninitialized reports at every inlined use: a known false positive.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <cmath>
#include <vector>

#include "kernels/cpu/exp_avx512.hpp"
#include "kernels/cpu/ops.hpp"

namespace fw::cpu::avx512 {
namespace {

// Lanes [0, rem) of a 16-lane vector, rem in [0, 16).
inline __mmask16 first_lanes(int64_t rem) { return static_cast<__mmask16>((1u << rem) - 1u); }

// f(i, mask) over [0, n) in steps of 16 lanes: every lane on in the body, the first n % 16 lanes on
// in the tail (masked loads and stores cost the same as plain ones with a full mask).
template <class F>
inline void for_lanes(int64_t n, F&& f) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) f(i, static_cast<__mmask16>(0xffff));
  if (i < n) f(i, first_lanes(n - i));
}


}  // namespace

void rms_norm(const float* x, const float* w, float* y, int64_t n, float eps) {
  // Four accumulators: one FMA chain would wait on its own latency at every step.
  __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();
  __m512 a2 = _mm512_setzero_ps(), a3 = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    const __m512 v0 = _mm512_loadu_ps(x + i), v1 = _mm512_loadu_ps(x + i + 16);
    const __m512 v2 = _mm512_loadu_ps(x + i + 32), v3 = _mm512_loadu_ps(x + i + 48);
    a0 = _mm512_fmadd_ps(v0, v0, a0);
    a1 = _mm512_fmadd_ps(v1, v1, a1);
    a2 = _mm512_fmadd_ps(v2, v2, a2);
    a3 = _mm512_fmadd_ps(v3, v3, a3);
  }
  for (; i + 16 <= n; i += 16) {
    const __m512 v = _mm512_loadu_ps(x + i);
    a0 = _mm512_fmadd_ps(v, v, a0);
  }
  if (i < n) {
    const __m512 v = _mm512_maskz_loadu_ps(first_lanes(n - i), x + i);
    a1 = _mm512_fmadd_ps(v, v, a1);
  }
  const float ss = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
  // The scale as the reference computes it (mean in double, then float).
  const float scale = 1.0f / std::sqrt(static_cast<float>(static_cast<double>(ss) / n) + eps);

  const __m512 s = _mm512_set1_ps(scale);
  for_lanes(n, [&](int64_t j, __mmask16 m) {  // (x * scale) * w, the reference's order
    const __m512 v = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + j), s);
    _mm512_mask_storeu_ps(y + j, m, _mm512_mul_ps(v, _mm512_maskz_loadu_ps(m, w + j)));
  });
}

void rope_norm(float* x, int n_head, int head_dim, int n_rot, int pos, float freq_base,
               float freq_scale) {
  // cos / sin depend on (pos, pair) only: one table per call serves every head.
  const rope_table table(n_rot, pos, freq_base, freq_scale);
  const float* cs = table.data();

  // With x = [a0 b0 a1 b1 ...], C = [c0 c0 c1 c1 ...] and S = [-s0 s0 -s1 s1 ...]:
  // x * C + swap_pairs(x) * S = [a0 c0 - b0 s0, b0 c0 + a0 s0, ...], the reference's rotation.
  // The products use the _round variants because GCC may fuse a plain mul + add into one FMA
  // (C++ allows contraction); kept apart they round like the scalar code, bit for bit.
  constexpr int rnd = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
  for (int i = 0; i < n_rot; i += 16) {  // table chunk outside: C and S are built once per chunk
    const __mmask16 m = n_rot - i >= 16 ? static_cast<__mmask16>(0xffff) : first_lanes(n_rot - i);
    const __m512 t = _mm512_maskz_loadu_ps(m, cs + i);
    const __m512 c = _mm512_moveldup_ps(t);
    const __m512 s_pos = _mm512_movehdup_ps(t);
    const __m512 s = _mm512_mask_sub_ps(s_pos, 0x5555, _mm512_setzero_ps(), s_pos);  // even lanes -s
    for (int h = 0; h < n_head; ++h) {
      float* v = x + static_cast<int64_t>(h) * head_dim + i;
      const __m512 a = _mm512_maskz_loadu_ps(m, v);
      const __m512 swapped = _mm512_permute_ps(a, 0xB1);  // [b0 a0 b1 a1 ...]
      const __m512 r = _mm512_add_ps(_mm512_mul_round_ps(a, c, rnd), _mm512_mul_round_ps(swapped, s, rnd));
      _mm512_mask_storeu_ps(v, m, r);
    }
  }
}

void silu_mul(float* gate, const float* up, int64_t n) {
  // silu(g) = g / (1 + e^-g); for g < -88.7, e^-g = +inf and the quotient is -0, as in the
  // reference (a reciprocal estimate would give NaN there).
  const auto silu_times = [](__m512 g, __m512 u) {
    const __m512 e = exp512(_mm512_sub_ps(_mm512_setzero_ps(), g));
    return _mm512_mul_ps(_mm512_div_ps(g, _mm512_add_ps(_mm512_set1_ps(1.0f), e)), u);
  };
  for_lanes(n, [&](int64_t i, __mmask16 m) {
    _mm512_mask_storeu_ps(gate + i, m, silu_times(_mm512_maskz_loadu_ps(m, gate + i), _mm512_maskz_loadu_ps(m, up + i)));
  });
}

void softmax(float* x, int64_t n) {
  // Pass 1: the max. Masked-off tail lanes read as -inf so they never win.
  const __m512 neg_inf = _mm512_set1_ps(-INFINITY);
  __m512 m0 = neg_inf, m1 = neg_inf;
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    m0 = _mm512_max_ps(m0, _mm512_loadu_ps(x + i));
    m1 = _mm512_max_ps(m1, _mm512_loadu_ps(x + i + 16));
  }
  for (; i + 16 <= n; i += 16) m0 = _mm512_max_ps(m0, _mm512_loadu_ps(x + i));
  if (i < n) m1 = _mm512_max_ps(m1, _mm512_mask_loadu_ps(neg_inf, first_lanes(n - i), x + i));
  const __m512 mx = _mm512_set1_ps(_mm512_reduce_max_ps(_mm512_max_ps(m0, m1)));

  // Pass 2: e^(x - max), stored, and summed. -inf entries give exactly 0.
  __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
  for (i = 0; i + 32 <= n; i += 32) {
    const __m512 e0 = exp512(_mm512_sub_ps(_mm512_loadu_ps(x + i), mx));
    const __m512 e1 = exp512(_mm512_sub_ps(_mm512_loadu_ps(x + i + 16), mx));
    _mm512_storeu_ps(x + i, e0);
    _mm512_storeu_ps(x + i + 16, e1);
    s0 = _mm512_add_ps(s0, e0);
    s1 = _mm512_add_ps(s1, e1);
  }
  for (; i + 16 <= n; i += 16) {
    const __m512 e = exp512(_mm512_sub_ps(_mm512_loadu_ps(x + i), mx));
    _mm512_storeu_ps(x + i, e);
    s0 = _mm512_add_ps(s0, e);
  }
  if (i < n) {
    const __mmask16 m = first_lanes(n - i);
    const __m512 e = exp512(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + i), mx));
    _mm512_mask_storeu_ps(x + i, m, e);
    s1 = _mm512_mask_add_ps(s1, m, s1, e);
  }
  const double sum = _mm512_reduce_add_ps(_mm512_add_ps(s0, s1));

  // Pass 3: normalize, with the reference's 1 / sum in double.
  const __m512 inv = _mm512_set1_ps(static_cast<float>(1.0 / sum));
  for_lanes(n, [&](int64_t j, __mmask16 m) {
    _mm512_mask_storeu_ps(x + j, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + j), inv));
  });
}

void add_inplace(float* y, const float* x, int64_t n) {
  for_lanes(n, [&](int64_t i, __mmask16 m) {
    _mm512_mask_storeu_ps(y + i, m, _mm512_add_ps(_mm512_maskz_loadu_ps(m, y + i), _mm512_maskz_loadu_ps(m, x + i)));
  });
}

void exp_inplace(float* x, int64_t n) {
  for_lanes(n, [&](int64_t i, __mmask16 m) {
    _mm512_mask_storeu_ps(x + i, m, exp512(_mm512_maskz_loadu_ps(m, x + i)));
  });
}

void fp32_to_fp16_row(const float* x, uint16_t* y, int64_t n) {
  for_lanes(n, [&](int64_t i, __mmask16 m) {
    _mm256_mask_storeu_epi16(y + i, m, _mm512_cvtps_ph(_mm512_maskz_loadu_ps(m, x + i), _MM_FROUND_TO_NEAREST_INT));
  });
}

}  // namespace fw::cpu::avx512
