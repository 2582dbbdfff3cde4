// AVX2 + FMA + F16C kernels (compiled with -mavx2 -mfma -mf16c; selected only when CPUID has them).
#include <immintrin.h>

#include <cmath>

#include "kernels/cpu/simd_avx2.hpp"
#include "kernels/cpu/vec_dot.hpp"

namespace fw::cpu::avx2 {
namespace {

inline float fp16(uint16_t h) { return _cvtsh_ss(h); }

// Products of 32 unsigned bytes with 32 signed bytes, summed per 4 into 8 int32 lanes, as floats.
inline __m256 mul_sum_us8(__m256i u, __m256i s) {
  const __m256i p16 = _mm256_maddubs_epi16(u, s);
  return _mm256_cvtepi32_ps(_mm256_madd_epi16(p16, _mm256_set1_epi16(1)));
}

inline __m256i unpack_nibbles(const uint8_t* qs) {
  const __m128i tmp = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  const __m256i both = _mm256_set_m128i(_mm_srli_epi16(tmp, 4), tmp);
  return _mm256_and_si256(both, _mm256_set1_epi8(0x0f));
}

// 8 vectors -> one: lane L combines (op) every lane of v[2 * (L % 4) + L / 4]; the caller lays
// block 4 * (i % 2) + i / 2 into v[i] and gets block L in lane L. 7 ops and 14 shuffles for 8
// horizontal reductions.
template <class Op>
inline __m256 reduce_8_ways(const __m256 (&v)[8], Op op) {
  __m256 b[4];
  for (int i = 0; i < 4; ++i)  // half 0: v[2i] folded to 4 lanes, half 1: v[2i + 1]
    b[i] = op(_mm256_permute2f128_ps(v[2 * i], v[2 * i + 1], 0x20), _mm256_permute2f128_ps(v[2 * i], v[2 * i + 1], 0x31));
  const __m256 c0 = op(_mm256_shuffle_ps(b[0], b[1], 0x44), _mm256_shuffle_ps(b[0], b[1], 0xEE));
  const __m256 c1 = op(_mm256_shuffle_ps(b[2], b[3], 0x44), _mm256_shuffle_ps(b[2], b[3], 0xEE));
  return op(_mm256_shuffle_ps(c0, c1, 0x88), _mm256_shuffle_ps(c0, c1, 0xDD));  // half h lane r: v[2r + h]
}

// Clamp to [-127, 127] like the reference before summing: when d is an fp16 subnormal its
// rounding error can push x / d past 127. Stores the block's 32 values; returns their sum's lanes.
inline __m256i quantize_block(const float* x, __m256 id, int8_t* qs) {
  const __m256i lo = _mm256_set1_epi32(-127), hi = _mm256_set1_epi32(127);
  __m256i i0 = _mm256_min_epi32(_mm256_max_epi32(_mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x), id)), lo), hi);
  __m256i i1 = _mm256_min_epi32(_mm256_max_epi32(_mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + 8), id)), lo), hi);
  __m256i i2 = _mm256_min_epi32(_mm256_max_epi32(_mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + 16), id)), lo), hi);
  __m256i i3 = _mm256_min_epi32(_mm256_max_epi32(_mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + 24), id)), lo), hi);
  const __m256i sum = _mm256_add_epi32(_mm256_add_epi32(i0, i1), _mm256_add_epi32(i2, i3));
  i0 = _mm256_packs_epi32(i0, i1);
  i2 = _mm256_packs_epi32(i2, i3);
  i0 = _mm256_packs_epi16(i0, i2);
  i0 = _mm256_permutevar8x32_epi32(i0, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(qs), i0);
  return sum;
}

inline __m256 abs_max_of_block(const float* x) {
  const __m256 sign_mask = _mm256_set1_ps(-0.0f);
  const __m256 m01 = _mm256_max_ps(_mm256_andnot_ps(sign_mask, _mm256_loadu_ps(x)), _mm256_andnot_ps(sign_mask, _mm256_loadu_ps(x + 8)));
  const __m256 m23 = _mm256_max_ps(_mm256_andnot_ps(sign_mask, _mm256_loadu_ps(x + 16)), _mm256_andnot_ps(sign_mask, _mm256_loadu_ps(x + 24)));
  return _mm256_max_ps(m01, m23);
}

// 8 blocks at once: their absolute maxima, scales and sums each as one vector.
inline void quantize_8_blocks(const float* x, block_q8x* y) {
  const auto slot = [](int i) { return 4 * (i % 2) + i / 2; };  // the block in reduce_8_ways' input i
  __m256 m[8];
  for (int i = 0; i < 8; ++i) m[i] = abs_max_of_block(x + 32 * slot(i));
  const __m256 amax = reduce_8_ways(m, [](__m256 a, __m256 b) { return _mm256_max_ps(a, b); });
  // The reference's arithmetic per lane: d = fp16(amax / 127), id = 1 / d (0 when d is 0).
  const __m256 d = _mm256_cvtph_ps(_mm256_cvtps_ph(_mm256_div_ps(amax, _mm256_set1_ps(127.f)), 0));
  const __m256 id = _mm256_and_ps(_mm256_cmp_ps(d, _mm256_setzero_ps(), _CMP_NEQ_OQ), _mm256_div_ps(_mm256_set1_ps(1.f), d));
  alignas(32) float ds[8], ids[8];
  _mm256_store_ps(ds, d);
  _mm256_store_ps(ids, id);
  __m256 sums[8];
  for (int i = 0; i < 8; ++i) {
    const int blk = slot(i);
    sums[i] = _mm256_castsi256_ps(quantize_block(x + 32 * blk, _mm256_set1_ps(ids[blk]), y[blk].qs));
  }
  alignas(32) int32_t sum[8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(sum), _mm256_castps_si256(reduce_8_ways(sums, [](__m256 a, __m256 b) {
                       return _mm256_castsi256_ps(_mm256_add_epi32(_mm256_castps_si256(a), _mm256_castps_si256(b)));
                     })));
  for (int b = 0; b < 8; ++b) y[b].d = ds[b], y[b].sum = sum[b];
}

}  // namespace

void quantize_q8x(const float* x, block_q8x* y, int64_t k) {
  int64_t b = 0;
  for (; b + 8 <= k / 32; b += 8, x += 8 * 32) quantize_8_blocks(x, y + b);
  for (; b < k / 32; ++b, x += 32) {
    const float d = _cvtsh_ss(_cvtss_sh(hmax(abs_max_of_block(x)) / 127.f, 0));
    y[b].d = d;
    y[b].sum = hsum_i32(quantize_block(x, _mm256_set1_ps(d != 0.f ? 1.f / d : 0.f), y[b].qs));
  }
}

float dot_f32(int64_t k, const void* w, const void* x) {
  const float* a = static_cast<const float*>(w);
  const float* b = static_cast<const float*>(x);
  __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= k; i += 16) {
    s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
    s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), s1);
  }
  float s = hsum(_mm256_add_ps(s0, s1));
  for (; i < k; ++i) s += a[i] * b[i];
  return s;
}

float dot_f16(int64_t k, const void* w, const void* x) {
  const uint16_t* a = static_cast<const uint16_t*>(w);
  const float* b = static_cast<const float*>(x);
  __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= k; i += 16) {
    const __m256 w0 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a + i)));
    const __m256 w1 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a + i + 8)));
    s0 = _mm256_fmadd_ps(w0, _mm256_loadu_ps(b + i), s0);
    s1 = _mm256_fmadd_ps(w1, _mm256_loadu_ps(b + i + 8), s1);
  }
  float s = hsum(_mm256_add_ps(s0, s1));
  for (; i < k; ++i) s += fp16(a[i]) * b[i];
  return s;
}

float dot_bf16(int64_t k, const void* w, const void* x) {
  const uint16_t* a = static_cast<const uint16_t*>(w);
  const float* b = static_cast<const float*>(x);
  __m256 s0 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= k; i += 8) {
    const __m256i h = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a + i)));
    const __m256 wv = _mm256_castsi256_ps(_mm256_slli_epi32(h, 16));
    s0 = _mm256_fmadd_ps(wv, _mm256_loadu_ps(b + i), s0);
  }
  float s = hsum(s0);
  for (; i < k; ++i) {
    uint32_t bits = static_cast<uint32_t>(a[i]) << 16;
    float f;
    __builtin_memcpy(&f, &bits, 4);
    s += f * b[i];
  }
  return s;
}

// -- quantized kernels: a tile of RW weight rows x RX activation rows -----------------------------
//
// Each (weight row, activation row) element has its own accumulators and the same sequence of
// explicit operations whatever the tile, so dot (1 x 1), gemv (4 x 1) and gemm (1 x 4) agree bit for
// bit. In gemm the weights are unpacked once per block for 4 activation rows (prefill, batched
// decode, verification); in gemv each activation block serves 4 weight rows (decode). Either way
// the tile's accumulator chains are independent, which hides the FMA latency.
//   q4_0, q4_1: sum((d q + m) a dx) = d dx sum(q a) + m dx sum(a), with m = -8 d for q4_0
//   q8_0:       d dx sum(q a), the products as |q| * sign(a, q) (maddubs needs one unsigned side)
namespace {

struct q4_0_format {
  using block = block_q4_0;
  static constexpr bool has_min = true;
  static __m256i weights(const block& b) { return unpack_nibbles(b.qs); }
  static float min(const block& b, float d) { (void)b; return -8.f * d; }
  static __m256 products(__m256i q, __m256i a) { return mul_sum_us8(q, a); }
};
struct q4_1_format {
  using block = block_q4_1;
  static constexpr bool has_min = true;
  static __m256i weights(const block& b) { return unpack_nibbles(b.qs); }
  static float min(const block& b, float) { return fp16(b.m); }
  static __m256 products(__m256i q, __m256i a) { return mul_sum_us8(q, a); }
};
struct q8_0_format {
  using block = block_q8_0;
  static constexpr bool has_min = false;
  static __m256i weights(const block& b) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs)); }
  static float min(const block&, float) { return 0.f; }
  static __m256 products(__m256i q, __m256i a) { return mul_sum_us8(_mm256_sign_epi8(q, q), _mm256_sign_epi8(a, q)); }
};

// y[j * ldy + i] = dot(weight row i, activation row j) for i < RW, j < RX.
template <class F, int RW, int RX>
void tile_q(int64_t k, const uint8_t* w, size_t w_stride, const uint8_t* x, size_t x_stride, float* y, int64_t ldy) {
  using block = typename F::block;
  const block* wr[RW];
  const block_q8x* xr[RX];
  __m256 acc[RW][RX];
  float mins[RW][RX];
  for (int i = 0; i < RW; ++i) wr[i] = reinterpret_cast<const block*>(w + i * w_stride);
  for (int j = 0; j < RX; ++j) xr[j] = reinterpret_cast<const block_q8x*>(x + j * x_stride);
  for (int i = 0; i < RW; ++i)
    for (int j = 0; j < RX; ++j) acc[i][j] = _mm256_setzero_ps(), mins[i][j] = 0.f;
  if constexpr (RW > 1) {  // rows side by side: fetch the next tile's rows (the prefetchers follow one stream best)
    const char* next = reinterpret_cast<const char*>(w + RW * w_stride);
    for (size_t off = 0; off < RW * w_stride; off += 64) _mm_prefetch(next + off, _MM_HINT_T0);
  }
  for (int64_t b = 0; b < k / 32; ++b) {
    __m256i a[RX];
#pragma GCC unroll 8
    for (int j = 0; j < RX; ++j) a[j] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xr[j][b].qs));
#pragma GCC unroll 8
    for (int i = 0; i < RW; ++i) {
      const __m256i q = F::weights(wr[i][b]);
      const float dw = fp16(wr[i][b].d);
      const float mw = F::min(wr[i][b], dw);
#pragma GCC unroll 8
      for (int j = 0; j < RX; ++j) {
        const block_q8x& xb = xr[j][b];
        acc[i][j] = _mm256_fmadd_ps(_mm256_set1_ps(dw * xb.d), F::products(q, a[j]), acc[i][j]);
        // std::fma: one explicit rounding, whatever the compiler's contraction setting.
        if constexpr (F::has_min) mins[i][j] = std::fma(mw * xb.d, static_cast<float>(xb.sum), mins[i][j]);
      }
    }
  }
  for (int i = 0; i < RW; ++i)
    for (int j = 0; j < RX; ++j) y[j * ldy + i] = hsum(acc[i][j]) + mins[i][j];
}

// Activation rows in groups of 4 (then 3, 2 or 1), each group against every weight row.
template <class F>
void gemm_q(int64_t k, const void* w, size_t w_stride, int64_t n_w, const void* x, size_t x_stride, int64_t n_x,
            float* y, int64_t ldy) {
  const auto* wp = static_cast<const uint8_t*>(w);
  const auto* xp = static_cast<const uint8_t*>(x);
  int64_t j = 0;
  for (; j + 4 <= n_x; j += 4)
    for (int64_t i = 0; i < n_w; ++i)
      tile_q<F, 1, 4>(k, wp + i * w_stride, 0, xp + j * x_stride, x_stride, y + j * ldy + i, ldy);
  const int64_t rest = n_x - j;
  for (int64_t i = 0; i < n_w && rest > 0; ++i) {
    const uint8_t* wr = wp + i * w_stride;
    const uint8_t* xj = xp + j * x_stride;
    float* yj = y + j * ldy + i;
    if (rest == 3) tile_q<F, 1, 3>(k, wr, 0, xj, x_stride, yj, ldy);
    else if (rest == 2) tile_q<F, 1, 2>(k, wr, 0, xj, x_stride, yj, ldy);
    else tile_q<F, 1, 1>(k, wr, 0, xj, x_stride, yj, ldy);
  }
}

// One activation row against weight rows in groups of 4 (decode): four independent chains.
template <class F>
void gemv_q(int64_t k, const void* w, size_t w_stride, int64_t n_w, const void* x, float* out) {
  const auto* wp = static_cast<const uint8_t*>(w);
  const auto* xp = static_cast<const uint8_t*>(x);
  int64_t i = 0;
  for (; i + 4 <= n_w; i += 4) tile_q<F, 4, 1>(k, wp + i * w_stride, w_stride, xp, 0, out + i, 0);
  for (; i < n_w; ++i) tile_q<F, 1, 1>(k, wp + i * w_stride, 0, xp, 0, out + i, 0);
}

template <class F>
float dot_q(int64_t k, const void* w, const void* x) {
  float out;
  tile_q<F, 1, 1>(k, static_cast<const uint8_t*>(w), 0, static_cast<const uint8_t*>(x), 0, &out, 0);
  return out;
}

}  // namespace

float dot_q4_0(int64_t k, const void* w, const void* x) { return dot_q<q4_0_format>(k, w, x); }
float dot_q4_1(int64_t k, const void* w, const void* x) { return dot_q<q4_1_format>(k, w, x); }
float dot_q8_0(int64_t k, const void* w, const void* x) { return dot_q<q8_0_format>(k, w, x); }

void gemm_q4_0(int64_t k, const void* w, size_t ws, int64_t nw, const void* x, size_t xs, int64_t nx, float* y,
               int64_t ldy) {
  gemm_q<q4_0_format>(k, w, ws, nw, x, xs, nx, y, ldy);
}
void gemm_q4_1(int64_t k, const void* w, size_t ws, int64_t nw, const void* x, size_t xs, int64_t nx, float* y,
               int64_t ldy) {
  gemm_q<q4_1_format>(k, w, ws, nw, x, xs, nx, y, ldy);
}
void gemm_q8_0(int64_t k, const void* w, size_t ws, int64_t nw, const void* x, size_t xs, int64_t nx, float* y,
               int64_t ldy) {
  gemm_q<q8_0_format>(k, w, ws, nw, x, xs, nx, y, ldy);
}
void gemv_q4_0(int64_t k, const void* w, size_t ws, int64_t nw, const void* x, float* out) {
  gemv_q<q4_0_format>(k, w, ws, nw, x, out);
}
void gemv_q4_1(int64_t k, const void* w, size_t ws, int64_t nw, const void* x, float* out) {
  gemv_q<q4_1_format>(k, w, ws, nw, x, out);
}
void gemv_q8_0(int64_t k, const void* w, size_t ws, int64_t nw, const void* x, float* out) {
  gemv_q<q8_0_format>(k, w, ws, nw, x, out);
}

}  // namespace fw::cpu::avx2
