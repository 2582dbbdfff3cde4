// AVX-512 (F/BW/VL/DQ) + VNNI kernels (compiled with -mavx512*; selected only when CPUID has them).
//
// Quantized weights: two 32-element blocks per zmm, multiplied with the 8-bit activations by one
// vpdpbusd (unsigned x signed bytes, summed per 4 into int32 lanes).
// - q4_0 / q4_1: nibbles are 0..15 (unsigned operand). The 16 bytes of two blocks are unpacked as
//   [lo0 lo1 hi0 hi1] and the activations are shuffled to match. q4_0's -8 offset is folded into
//   the accumulator's start value: each of a block's 8 lanes starts at -sum(x) (8 * -sum(x) =
//   -8 * sum(x)); q4_1's min term m * d_x * sum(x) goes into the same accumulator through a
//   second FMA whose product is zero except in two lanes.
// - q8_0: signed weights become unsigned by flipping the top bit (w + 128); the extra
//   128 * sum(x) is again removed through the accumulator's start value (-16 * sum(x) per lane).
// The per-block scales (fp16 in the weights, f32 in the activations) are multiplied for two
// blocks at once and spread over their lanes with one permute.
//
// Every kernel is a register tile of RW weight rows x RX activation rows: the activation shuffle,
// scales and offsets are prepared once per tile and serve RW rows, the unpacked weights serve RX
// rows. dot is a 1 x 1 tile, gemm 4 x 4 (prefill and batched rows).
// vec_dot_packed_avx512.cpp has the faster kernels for weights repacked at load.
//
// GCC 12's AVX-512 headers build "undefined" vectors as `__m512 __Y = __Y;`, which
// -W(maybe-)uninitialized reports at every inlined use: a known false positive.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include "kernels/cpu/vec_dot.hpp"

namespace fw::cpu::avx512 {
namespace {

// -- quantized: per-pair activation side -------------------------------------------------------

// [d_x0, d_x0, d_x1, d_x1] and the raw {d, sum} words of blocks b and b + 1.
struct act_scales {
  __m128i ds;  ///< int32 view: [bits(d0), sum0, bits(d1), sum1]
  __m128 d;    ///< [d0, d0, d1, d1]
};

inline act_scales load_act_scales(const block_q8x* x) {
  act_scales s;
  s.ds = _mm_unpacklo_epi64(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(&x[0])),
                            _mm_loadl_epi64(reinterpret_cast<const __m128i*>(&x[1])));
  s.d = _mm_moveldup_ps(_mm_castsi128_ps(s.ds));
  return s;
}

// The fp16 words at the start of weight blocks p0 and p1 (d, and m for q4_1) as
// [w0.lo16, w0.hi16, w1.lo16, w1.hi16] floats.
inline __m128 load_weight_scales(const void* p0, const void* p1) {
  int32_t a, b;
  __builtin_memcpy(&a, p0, 4);
  __builtin_memcpy(&b, p1, 4);
  return _mm_cvtph_ps(_mm_unpacklo_epi32(_mm_cvtsi32_si128(a), _mm_cvtsi32_si128(b)));
}

// Lane layout of the q4 products: int32 lanes 0-3 and 8-11 belong to block 0, 4-7 and 12-15 to
// block 1. For q8_0: lanes 0-7 block 0, 8-15 block 1.
inline __m512i q4_scale_index() { return _mm512_setr_epi32(0, 0, 0, 0, 2, 2, 2, 2, 0, 0, 0, 0, 2, 2, 2, 2); }
inline __m512i q4_sum_index() { return _mm512_setr_epi32(1, 1, 1, 1, 3, 3, 3, 3, 1, 1, 1, 1, 3, 3, 3, 3); }
inline __m512i q8_scale_index() { return _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 2, 2, 2, 2, 2, 2, 2, 2); }
inline __m512i q8_sum_index() { return _mm512_setr_epi32(1, 1, 1, 1, 1, 1, 1, 1, 3, 3, 3, 3, 3, 3, 3, 3); }

// Activations of blocks b, b + 1 as [x0[0:16] x1[0:16] x0[16:32] x1[16:32]] (the q4 layout).
inline __m512i load_act_q4(const block_q8x* x) {
  const __m512i z = _mm512_inserti64x4(
      _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[0].qs))),
      _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[1].qs)), 1);
  return _mm512_shuffle_i64x2(z, z, _MM_SHUFFLE(3, 1, 2, 0));
}

// Activations of blocks b, b + 1 as [x0 x1] (the q8_0 layout).
inline __m512i load_act_q8(const block_q8x* x) {
  return _mm512_inserti64x4(
      _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[0].qs))),
      _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[1].qs)), 1);
}

// Nibbles of two q4 blocks (16 bytes each) as [lo0 lo1 hi0 hi1], values 0..15.
inline __m512i unpack_q4_pair(const uint8_t* qs0, const uint8_t* qs1) {
  const __m256i q = _mm256_inserti128_si256(
      _mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(qs0))),
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs1)), 1);
  const __m512i both = _mm512_inserti64x4(_mm512_castsi256_si512(q), _mm256_srli_epi16(q, 4), 1);
  return _mm512_and_si512(both, _mm512_set1_epi8(0x0f));
}

// Two q8_0 blocks' 32 bytes each, as unsigned bytes w + 128.
inline __m512i load_q8_pair(const int8_t* qs0, const int8_t* qs1) {
  const __m512i z = _mm512_inserti64x4(
      _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs0))),
      _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs1)), 1);
  return _mm512_xor_si512(z, _mm512_set1_epi8(static_cast<char>(0x80)));
}

// The rows of a tile are read side by side in short runs, which the hardware prefetchers do not
// follow well (measured: q8_0 4-row tiles streamed from DRAM at less than half the speed of one
// row after another). Tiles are walked in address order, so fetch the whole next tile up front.
template <int RW>
inline void prefetch_next_tile(const uint8_t* w, size_t w_stride) {
  if constexpr (RW > 1) {
    const char* next = reinterpret_cast<const char*>(w + RW * w_stride);
    for (size_t off = 0; off < RW * w_stride; off += 64) _mm_prefetch(next + off, _MM_HINT_T0);
  }
}

// -- quantized kernels: a tile of RW weight rows x RX activation rows ---------------------------
//
// Each (weight row, activation row) element has its own accumulator and the same sequence of
// operations whatever the tile shape, so dot, gemv and gemm agree bit for bit.

// Activation side of one pair of blocks, shared by every weight row of a tile.
struct act_pair {
  __m512i q;     ///< the 64 activations in the weight format's layout
  __m512i bias;  ///< accumulator start value (removes the weight format's offset)
  __m128 d;      ///< [d0, d0, d1, d1]
  __m128 sum;    ///< [0, sum0, 0, sum1] (q4_1's min term)
};

struct q4_0_format {
  using block = block_q4_0;
  static constexpr bool has_min = false;
  static __m512i scale_index() { return q4_scale_index(); }
  static act_pair act(const block_q8x* x) {
    const act_scales xs = load_act_scales(x);
    act_pair a;
    a.q = load_act_q4(x);
    // -sum(x) in each lane: 8 lanes per block give the -8 * sum(x) of q4_0's offset.
    a.bias = _mm512_sub_epi32(_mm512_setzero_si512(),
                              _mm512_permutexvar_epi32(q4_sum_index(), _mm512_castsi128_si512(xs.ds)));
    a.d = xs.d;
    a.sum = _mm_setzero_ps();
    return a;
  }
  static __m512i weights(const block* w) { return unpack_q4_pair(w[0].qs, w[1].qs); }
  static float tail(const block* w, const block_q8x* x) { return ref::dot_q4_0(32, w, x); }
};

struct q4_1_format {
  using block = block_q4_1;
  static constexpr bool has_min = true;
  static __m512i scale_index() { return q4_scale_index(); }
  static act_pair act(const block_q8x* x) {
    const act_scales xs = load_act_scales(x);
    act_pair a;
    a.q = load_act_q4(x);
    a.bias = _mm512_setzero_si512();
    a.d = xs.d;
    a.sum = _mm_maskz_cvtepi32_ps(0b1010, xs.ds);
    return a;
  }
  static __m512i weights(const block* w) { return unpack_q4_pair(w[0].qs, w[1].qs); }
  static float tail(const block* w, const block_q8x* x) { return ref::dot_q4_1(32, w, x); }
};

struct q8_0_format {
  using block = block_q8_0;
  static constexpr bool has_min = false;
  static __m512i scale_index() { return q8_scale_index(); }
  static act_pair act(const block_q8x* x) {
    const act_scales xs = load_act_scales(x);
    act_pair a;
    a.q = load_act_q8(x);
    // (w + 128) * x sums to dot + 128 * sum(x): start each of a block's 8 lanes at -16 * sum(x).
    a.bias = _mm512_sub_epi32(
        _mm512_setzero_si512(),
        _mm512_slli_epi32(_mm512_permutexvar_epi32(q8_sum_index(), _mm512_castsi128_si512(xs.ds)), 4));
    a.d = xs.d;
    a.sum = _mm_setzero_ps();
    return a;
  }
  static __m512i weights(const block* w) { return load_q8_pair(w[0].qs, w[1].qs); }
  static float tail(const block* w, const block_q8x* x) { return ref::dot_q8_0(32, w, x); }
};

// y[j * ldy + i] = dot(weight row i, activation row j) for i < RW, j < RX.
template <class F, int RW, int RX>
void tile_q(int64_t k, const uint8_t* w, size_t w_stride, const uint8_t* x, size_t x_stride, float* y,
            int64_t ldy) {
  using block = typename F::block;
  const int64_t nb = k / 32;
  const __m512i scale_idx = F::scale_index();
  __m512 acc[RW][RX];
  for (int i = 0; i < RW; ++i)
    for (int j = 0; j < RX; ++j) acc[i][j] = _mm512_setzero_ps();
  prefetch_next_tile<RW>(w, w_stride);
  int64_t b = 0;
  for (; b + 2 <= nb; b += 2) {
    act_pair a[RX];
#pragma GCC unroll 8
    for (int j = 0; j < RX; ++j) a[j] = F::act(reinterpret_cast<const block_q8x*>(x + j * x_stride) + b);
#pragma GCC unroll 8
    for (int i = 0; i < RW; ++i) {
      const block* wb = reinterpret_cast<const block*>(w + i * w_stride) + b;
      const __m512i wq = F::weights(wb);
      const __m128 ws = load_weight_scales(&wb[0], &wb[1]);
#pragma GCC unroll 8
      for (int j = 0; j < RX; ++j) {
        const __m512i dot = _mm512_dpbusd_epi32(a[j].bias, wq, a[j].q);
        // [d0 dx0, m0 dx0, d1 dx1, m1 dx1] (lanes 1 and 3 unused without a min)
        const __m128 s = _mm_mul_ps(ws, a[j].d);
        const __m512 sv = _mm512_permutexvar_ps(scale_idx, _mm512_castps128_ps512(s));
        acc[i][j] = _mm512_fmadd_ps(sv, _mm512_cvtepi32_ps(dot), acc[i][j]);
        // q4_1: m * dx * sum(x) lands in lanes 1 and 3, summed with the rest at the end.
        if constexpr (F::has_min)
          acc[i][j] = _mm512_fmadd_ps(_mm512_zextps128_ps512(s), _mm512_zextps128_ps512(a[j].sum), acc[i][j]);
      }
    }
  }
  for (int i = 0; i < RW; ++i) {
    for (int j = 0; j < RX; ++j) {
      float r = _mm512_reduce_add_ps(acc[i][j]);
      if (b < nb)
        r += F::tail(reinterpret_cast<const block*>(w + i * w_stride) + b,
                     reinterpret_cast<const block_q8x*>(x + j * x_stride) + b);
      y[j * ldy + i] = r;
    }
  }
}

// -- float kernels ------------------------------------------------------------------------------

enum class fkind { f32, f16, bf16 };


template <fkind K>
inline __m512 load16(const void* p, int64_t i) {
  if constexpr (K == fkind::f32) {
    return _mm512_loadu_ps(static_cast<const float*>(p) + i);
  } else {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(static_cast<const uint16_t*>(p) + i));
    if constexpr (K == fkind::f16) return _mm512_cvtph_ps(h);
    else return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
}

template <fkind K>
inline __m512 load16_masked(const void* p, int64_t i, __mmask16 m) {
  if constexpr (K == fkind::f32) {
    return _mm512_maskz_loadu_ps(m, static_cast<const float*>(p) + i);
  } else {
    const __m256i h = _mm256_maskz_loadu_epi16(m, static_cast<const uint16_t*>(p) + i);
    if constexpr (K == fkind::f16) return _mm512_cvtph_ps(h);
    else return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
}


// y[j * ldy + i] = dot(weight row i, activation row j); two accumulators per element (32
// elements per step), masked tail.
template <fkind K, int RW, int RX>
void tile_f(int64_t k, const uint8_t* w, size_t w_stride, const uint8_t* xb, size_t x_stride, float* y,
            int64_t ldy) {
  __m512 a0[RW][RX], a1[RW][RX];
  for (int i = 0; i < RW; ++i)
    for (int j = 0; j < RX; ++j) a0[i][j] = _mm512_setzero_ps(), a1[i][j] = _mm512_setzero_ps();
  const auto xrow = [&](int j) { return reinterpret_cast<const float*>(xb + j * x_stride); };
  prefetch_next_tile<RW>(w, w_stride);
  int64_t e = 0;
  for (; e + 32 <= k; e += 32) {
    __m512 x0[RX], x1[RX];
#pragma GCC unroll 8
    for (int j = 0; j < RX; ++j) x0[j] = _mm512_loadu_ps(xrow(j) + e), x1[j] = _mm512_loadu_ps(xrow(j) + e + 16);
#pragma GCC unroll 8
    for (int i = 0; i < RW; ++i) {
      const __m512 w0 = load16<K>(w + i * w_stride, e), w1 = load16<K>(w + i * w_stride, e + 16);
#pragma GCC unroll 8
      for (int j = 0; j < RX; ++j) {
        a0[i][j] = _mm512_fmadd_ps(w0, x0[j], a0[i][j]);
        a1[i][j] = _mm512_fmadd_ps(w1, x1[j], a1[i][j]);
      }
    }
  }
  for (; e < k; e += 16) {
    const __mmask16 m = k - e >= 16 ? __mmask16(0xffff) : __mmask16((1u << (k - e)) - 1);
    for (int i = 0; i < RW; ++i) {
      const __m512 w0 = load16_masked<K>(w + i * w_stride, e, m);
      for (int j = 0; j < RX; ++j) a0[i][j] = _mm512_fmadd_ps(w0, _mm512_maskz_loadu_ps(m, xrow(j) + e), a0[i][j]);
    }
  }
  for (int i = 0; i < RW; ++i)
    for (int j = 0; j < RX; ++j) y[j * ldy + i] = _mm512_reduce_add_ps(_mm512_add_ps(a0[i][j], a1[i][j]));
}

// -- drivers ------------------------------------------------------------------------------------

using tile_fn = void (*)(int64_t, const uint8_t*, size_t, const uint8_t*, size_t, float*, int64_t);

// Covers n_w x n_x with TW x TX tiles, then TW x 1, 1 x TX and 1 x 1 tiles at the edges.
template <int TW, int TX, tile_fn Full, tile_fn Rows, tile_fn Cols, tile_fn One>
void gemm_tiles(int64_t k, const void* w, size_t w_stride, int64_t n_w, const void* x, size_t x_stride,
                int64_t n_x, float* y, int64_t ldy) {
  const auto* wp = static_cast<const uint8_t*>(w);
  const auto* xp = static_cast<const uint8_t*>(x);
  int64_t j = 0;
  for (; j + TX <= n_x; j += TX) {
    int64_t i = 0;
    for (; i + TW <= n_w; i += TW) Full(k, wp + i * w_stride, w_stride, xp + j * x_stride, x_stride, y + j * ldy + i, ldy);
    for (; i < n_w; ++i) Cols(k, wp + i * w_stride, w_stride, xp + j * x_stride, x_stride, y + j * ldy + i, ldy);
  }
  for (; j < n_x; ++j) {
    int64_t i = 0;
    for (; i + TW <= n_w; i += TW) Rows(k, wp + i * w_stride, w_stride, xp + j * x_stride, x_stride, y + j * ldy + i, ldy);
    for (; i < n_w; ++i) One(k, wp + i * w_stride, w_stride, xp + j * x_stride, x_stride, y + j * ldy + i, ldy);
  }
}

template <tile_fn One>
float dot_one(int64_t k, const void* w, const void* x) {
  float out;
  One(k, static_cast<const uint8_t*>(w), 0, static_cast<const uint8_t*>(x), 0, &out, 0);
  return out;
}

template <int RW, int RX> constexpr tile_fn f32_tile = tile_f<fkind::f32, RW, RX>;
template <int RW, int RX> constexpr tile_fn f16_tile = tile_f<fkind::f16, RW, RX>;
template <int RW, int RX> constexpr tile_fn bf16_tile = tile_f<fkind::bf16, RW, RX>;
template <int RW, int RX> constexpr tile_fn q4_0_tile = tile_q<q4_0_format, RW, RX>;
template <int RW, int RX> constexpr tile_fn q4_1_tile = tile_q<q4_1_format, RW, RX>;
template <int RW, int RX> constexpr tile_fn q8_0_tile = tile_q<q8_0_format, RW, RX>;

}  // namespace

namespace {

// 16 vectors -> one: lane L combines (op) every lane of v[4 * (L % 4) + L / 4] (the tree below
// leaves block 4r + q's result in lane 4q + r, so the caller lays the blocks out transposed and
// gets block L in lane L). 15 ops and 30 in-lane or 128-bit shuffles for 16 horizontal reductions,
// instead of 16 chains of 4 dependent shuffle-and-op steps each.
template <class Op>
inline __m512 reduce_16_ways(const __m512 (&v)[16], Op op) {
  __m512 b[8], c[4];
  for (int i = 0; i < 8; ++i)  // 128-bit chunks 0, 1 of v[2i] (its 16 lanes folded to 8), 2, 3 of v[2i + 1]
    b[i] = op(_mm512_shuffle_f32x4(v[2 * i], v[2 * i + 1], 0x44), _mm512_shuffle_f32x4(v[2 * i], v[2 * i + 1], 0xEE));
  for (int i = 0; i < 4; ++i)  // chunk q: v[4i + q] folded to 4 lanes
    c[i] = op(_mm512_shuffle_f32x4(b[2 * i], b[2 * i + 1], 0x88), _mm512_shuffle_f32x4(b[2 * i], b[2 * i + 1], 0xDD));
  const __m512 d0 = op(_mm512_shuffle_ps(c[0], c[1], 0x44), _mm512_shuffle_ps(c[0], c[1], 0xEE));
  const __m512 d1 = op(_mm512_shuffle_ps(c[2], c[3], 0x44), _mm512_shuffle_ps(c[2], c[3], 0xEE));
  return op(_mm512_shuffle_ps(d0, d1, 0x88), _mm512_shuffle_ps(d0, d1, 0xDD));  // chunk q lane r: v[4r + q]
}

// Same arithmetic as the reference: x * (1 / d) rounded to nearest even, clamped to [-127, 127].
// Stores the block's 32 values; returns their sum's lanes.
inline __m512i quantize_block(const float* x, __m512 id, int8_t* qs) {
  const __m512i lo = _mm512_set1_epi32(-127), hi = _mm512_set1_epi32(127);
  constexpr int rnd = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
  const __m512i i0 = _mm512_min_epi32(_mm512_max_epi32(_mm512_cvt_roundps_epi32(_mm512_mul_ps(_mm512_loadu_ps(x), id), rnd), lo), hi);
  const __m512i i1 = _mm512_min_epi32(_mm512_max_epi32(_mm512_cvt_roundps_epi32(_mm512_mul_ps(_mm512_loadu_ps(x + 16), id), rnd), lo), hi);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(qs), _mm512_cvtepi32_epi8(i0));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(qs + 16), _mm512_cvtepi32_epi8(i1));
  return _mm512_add_epi32(i0, i1);
}

// 16 blocks at once: their absolute maxima, scales and sums each as one vector.
inline void quantize_16_blocks(const float* x, block_q8x* y) {
  const auto slot = [](int i) { return 4 * (i % 4) + i / 4; };  // the block in reduce_16_ways' input i
  __m512 m[16];
  for (int i = 0; i < 16; ++i) {
    const float* xb = x + 32 * slot(i);
    m[i] = _mm512_max_ps(_mm512_abs_ps(_mm512_loadu_ps(xb)), _mm512_abs_ps(_mm512_loadu_ps(xb + 16)));
  }
  const __m512 amax = reduce_16_ways(m, [](__m512 a, __m512 b) { return _mm512_max_ps(a, b); });
  // The reference's arithmetic per lane: d = fp16(amax / 127), id = 1 / d (0 when d is 0).
  const __m512 d = _mm512_cvtph_ps(_mm512_cvtps_ph(_mm512_div_ps(amax, _mm512_set1_ps(127.f)), _MM_FROUND_TO_NEAREST_INT));
  const __m512 id = _mm512_maskz_div_ps(_mm512_cmp_ps_mask(d, _mm512_setzero_ps(), _CMP_NEQ_OQ), _mm512_set1_ps(1.f), d);
  alignas(64) float ds[16], ids[16];
  _mm512_store_ps(ds, d);
  _mm512_store_ps(ids, id);
  __m512 sums[16];
  for (int i = 0; i < 16; ++i) {
    const int blk = slot(i);
    sums[i] = _mm512_castsi512_ps(quantize_block(x + 32 * blk, _mm512_set1_ps(ids[blk]), y[blk].qs));
  }
  alignas(64) int32_t sum[16];
  _mm512_store_si512(sum, _mm512_castps_si512(reduce_16_ways(sums, [](__m512 a, __m512 b) {
                       return _mm512_castsi512_ps(_mm512_add_epi32(_mm512_castps_si512(a), _mm512_castps_si512(b)));
                     })));
  for (int b = 0; b < 16; ++b) y[b].d = ds[b], y[b].sum = sum[b];
}

}  // namespace

void quantize_q8x(const float* x, block_q8x* y, int64_t k) {
  int64_t b = 0;
  for (; b + 16 <= k / 32; b += 16, x += 16 * 32) quantize_16_blocks(x, y + b);
  for (; b < k / 32; ++b, x += 32) {  // the tail, one block at a time: the fp16-rounded scale d
    const __m512 v0 = _mm512_loadu_ps(x), v1 = _mm512_loadu_ps(x + 16);
    const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(v0), _mm512_abs_ps(v1)));
    const float d = _cvtsh_ss(_cvtss_sh(amax / 127.f, _MM_FROUND_TO_NEAREST_INT));
    y[b].d = d;
    y[b].sum = _mm512_reduce_add_epi32(quantize_block(x, _mm512_set1_ps(d != 0.f ? 1.f / d : 0.f), y[b].qs));
  }
}

// dot = a 1 x 1 tile; gemm = TW x TX tiles (4 x 4 quantized, 4 x 2 float). No multi-row gemv
// here: 4-row tiles streamed from DRAM measured no faster than one row after another (slower for
// q8_0 and the float types, whose interleaved rows the prefetchers do not follow); decode's fast
// path is the packed layout.
#define FW_AVX512_ENTRY_POINTS(name, TW, TX)                                                            \
  float dot_##name(int64_t k, const void* w, const void* x) { return dot_one<name##_tile<1, 1>>(k, w, x); } \
  void gemm_##name(int64_t k, const void* w, size_t ws, int64_t nw, const void* x, size_t xs, int64_t nx,  \
                   float* y, int64_t ldy) {                                                                \
    gemm_tiles<TW, TX, name##_tile<TW, TX>, name##_tile<TW, 1>, name##_tile<1, TX>, name##_tile<1, 1>>(    \
        k, w, ws, nw, x, xs, nx, y, ldy);                                                                  \
  }

FW_AVX512_ENTRY_POINTS(f32, 4, 2)
FW_AVX512_ENTRY_POINTS(f16, 4, 2)
FW_AVX512_ENTRY_POINTS(bf16, 4, 2)
FW_AVX512_ENTRY_POINTS(q4_0, 4, 4)
FW_AVX512_ENTRY_POINTS(q4_1, 4, 4)
FW_AVX512_ENTRY_POINTS(q8_0, 4, 4)
#undef FW_AVX512_ENTRY_POINTS

}  // namespace fw::cpu::avx512
