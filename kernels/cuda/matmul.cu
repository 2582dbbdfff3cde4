// matmul: y = x w^T for quantized or float weights, dequantizing in registers. Two paths:
// - Q4_0 / Q4_1 / Q8_0 with activation scratch (q8_act.hpp): the activations are quantized to
//   int8 blocks once (a warp per 32-block), then a warp per output channel and M rows at a time:
//   lane l takes the weight blocks l, l + 32, ... whole (their quants as 32-bit words, dp4a against
//   the activation block's 8 words), two blocks in flight, and the warp reduces. What a lane reads
//   besides the weights is 32 bytes of activations a block and row (128 as floats).
// - every format, f32 activations: each lane decodes 32-element chunks of the weight row
//   (chunk j = lane, lane + 32, ...) and multiplies them into its M accumulators, then the warp
//   reduces.
// Decode (M = 1..8) streams each weight byte once. From mma_min_rows (9) rows the integer
// products of Q4_0 / Q4_1 / Q8_0 run on the tensor cores instead (mma.sync m16n8k32 int8,
// mma_frag.hpp): prefills and large batches. The other formats' longer batches run ceil(m / 8)
// column blocks of the grid, which reread the weights from L2. Thread-safety: see cuda_kernels.hpp.
#include <type_traits>

#include "kernels/cuda/cuda_kernels.hpp"
#include "kernels/cuda/mma_frag.hpp"
#include "kernels/cuda/q16_act.hpp"
#include "kernels/cuda/q8_act.hpp"

namespace fw::cuda {
namespace {

constexpr int warps_per_block = 8;

// What a warp of a product computes: output channel col (blockIdx.x's warps, one channel each)
// for the batch rows [r0, r0 + rows) (blockIdx.y's group of M).
template <int M>
struct warp_task {
  int lane;
  int64_t col, r0;
  int rows;
  __device__ explicit warp_task(int64_t m)
      : lane(static_cast<int>(threadIdx.x & 31)),
        col(static_cast<int64_t>(blockIdx.x) * warps_per_block + (threadIdx.x >> 5)),
        r0(static_cast<int64_t>(blockIdx.y) * M),
        rows(static_cast<int>(m - r0 < M ? m - r0 : M)) {}
  /// Sums each row's lane partials over the warp; lane 0 writes them (times scales[row] if given).
  __device__ void store(const float* acc, float* __restrict__ y, int64_t ldy, const float* scales = nullptr) const {
#pragma unroll
    for (int r = 0; r < M; ++r) {
      float v = acc[r];
      for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
      if (lane == 0 && r < rows) y[(r0 + r) * ldy + col] = scales ? v * scales[r0 + r] : v;
    }
  }
};

template <wfmt F, int M>
__global__ void matmul_kernel(const uint8_t* __restrict__ w, int64_t row_bytes, int64_t n, int64_t k,
                              const float* __restrict__ x, int64_t ldx, int64_t m, float* __restrict__ y,
                              int64_t ldy) {
  const warp_task<M> t(m);
  if (t.col >= n) return;
  const int lane = t.lane, rows = t.rows;
  const int64_t col = t.col, r0 = t.r0;
  const uint8_t* wrow = w + col * row_bytes;
  float acc[M];
#pragma unroll
  for (int r = 0; r < M; ++r) acc[r] = 0.f;
  const int64_t chunks = k / 32;
  for (int64_t j = lane; j < chunks; j += 32) {
    float wv[32];
    decode_chunk<F>(wrow, j, wv);
#pragma unroll
    for (int r = 0; r < M; ++r) {
      if (r < rows) {
        const float4* xv = reinterpret_cast<const float4*>(x + (r0 + r) * ldx + 32 * j);
        float s = 0.f;
#pragma unroll
        for (int i = 0; i < 8; ++i) {
          const float4 v = __ldg(xv + i);
          s += wv[4 * i] * v.x + wv[4 * i + 1] * v.y + wv[4 * i + 2] * v.z + wv[4 * i + 3] * v.w;
        }
        acc[r] += s;
      }
    }
  }
  t.store(acc, y, ldy);
}

// Rows of k floats (ldx apart) -> int8 blocks and their (scale, sum) pairs: a warp per block.
__global__ void quantize_act_kernel(const float* __restrict__ x, int64_t ldx, int64_t m, int64_t k,
                                    int8_t* __restrict__ qs, float2* __restrict__ ds) {
  const int lane = threadIdx.x & 31;
  const int64_t nb = k / 32;
  const int64_t blk = static_cast<int64_t>(blockIdx.x) * warps_per_block + (threadIdx.x >> 5);
  if (blk >= m * nb) return;
  const int64_t r = blk / nb, b = blk % nb;
  const float v = x[r * ldx + 32 * b + lane];
  float amax = fabsf(v);
  for (int o = 16; o > 0; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
  const float d = act_block_scale(amax);
  const int8_t q = act_quant(v, d != 0.f ? 1.f / d : 0.f);
  int sum = q;
  for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
  qs[r * k + 32 * b + lane] = q;
  if (lane == 0) ds[r * nb + b] = make_float2(d, static_cast<float>(sum));
}

template <wfmt F, int M>
__device__ __forceinline__ void add_block(const uint8_t* __restrict__ wrow, int64_t b, int64_t k, int64_t nb,
                                          const int8_t* __restrict__ qs, const float2* __restrict__ ds, int64_t r0,
                                          int rows, float* acc) {
  q_block w;
  load_q_block<F>(wrow, b, w);
#pragma unroll
  for (int r = 0; r < M; ++r) {
    // Rows past m read row r0 again (no branch: the loads of both blocks in flight can be
    // issued together); their sums are never written.
    const int64_t row = r0 + (r < rows ? r : 0);
    const int4* xv = reinterpret_cast<const int4*>(qs + row * k + 32 * b);
    const int4 lo = __ldg(xv), hi = __ldg(xv + 1);
    const int32_t x[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
    const float2 s = __ldg(ds + row * nb + b);
    acc[r] += q_block_dot<F>(w, x, s.x, static_cast<int32_t>(s.y));
  }
}

template <wfmt F, int M>
__global__ void matmul_q8_kernel(const uint8_t* __restrict__ w, int64_t row_bytes, int64_t n, int64_t k,
                                 const int8_t* __restrict__ qs, const float2* __restrict__ ds, int64_t m,
                                 float* __restrict__ y, int64_t ldy) {
  const warp_task<M> t(m);
  if (t.col >= n) return;
  const int lane = t.lane, rows = t.rows;
  const int64_t col = t.col, r0 = t.r0;
  const uint8_t* wrow = w + col * row_bytes;
  const int64_t nb = k / 32;
  float acc[M];
#pragma unroll
  for (int r = 0; r < M; ++r) acc[r] = 0.f;
  for_lane_blocks(lane, nb, [&](int64_t b) { add_block<F, M>(wrow, b, k, nb, qs, ds, r0, rows, acc); });
  t.store(acc, y, ldy);
}

// The tensor-core product (mma_frag.hpp) of m >= mma_min_rows rows: a thread block of mma_warps
// warps takes mma_block_channels channels x mma_tokens tokens, each warp mma_warp_channels of the
// channels (mma_m_tiles m16 tiles) x the tokens (mma_n_tiles n8 tiles) over all of k, a scale
// group of GB blocks at a time (Q4_0 / Q4_1 / Q8_0: 1 block, each with its own scales; W8A8: the
// activations' group of 64 or 32), each int32 result then taking its group's float term in group
// order. blockIdx.x walks the token tiles, so the thread blocks that run together share their
// channels' weights in L2: a weight byte comes from memory about once a product, and the int8
// activations (m k bytes) stay in L2. Rows past n and tokens past m are read as the last one
// (every lane takes part in an mma) and never written. xs: Q4_0 / Q4_1 / Q8_0 the activations'
// (scale, sum) float2 per block, W8A8 their float scale per group.
template <wfmt F, int GB>
__global__ void __launch_bounds__(32 * mma_warps)
    matmul_mma_kernel(const uint8_t* __restrict__ w, int64_t row_bytes, int64_t n, int64_t k,
                      const int8_t* __restrict__ qs, const void* __restrict__ xs, int64_t m, float* __restrict__ y,
                      int64_t ldy) {
  constexpr bool w8 = F == wfmt::w8;
  const mma_lane l = mma_lane_of(static_cast<int>(threadIdx.x & 31));
  const int64_t t0 = static_cast<int64_t>(blockIdx.x) * mma_tokens;
  const int64_t c0 = static_cast<int64_t>(blockIdx.y) * mma_block_channels + (threadIdx.x >> 5) * mma_warp_channels;
  const int64_t groups = k / 32 / GB;
  const uint8_t* wr[mma_m_tiles][2];  // channels group and group + 8 of each m16 tile (A and C)
#pragma unroll
  for (int mt = 0; mt < mma_m_tiles; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) wr[mt][h] = w + min(c0 + 16 * mt + l.group + 8 * h, n - 1) * row_bytes;
  const int8_t* xr[mma_n_tiles];  // token group of each n8 tile (B)
  int64_t sr[mma_n_tiles][2];     // tokens 2 quad and 2 quad + 1 of each n8 tile (C): their first scale
#pragma unroll
  for (int nt = 0; nt < mma_n_tiles; ++nt) {
    xr[nt] = qs + min(t0 + 8 * nt + l.group, m - 1) * k;
#pragma unroll
    for (int j = 0; j < 2; ++j) sr[nt][j] = min(t0 + 8 * nt + 2 * l.quad + j, m - 1) * groups;
  }
  float acc[mma_m_tiles][mma_n_tiles][4] = {};
#pragma unroll(GB == 1 ? 2 : 1)
  for (int64_t g = 0; g < groups; ++g) {
    int32_t c[mma_m_tiles][mma_n_tiles][4] = {};
#pragma unroll
    for (int j = 0; j < GB; ++j) {
      const int64_t b = g * GB + j;
      uint32_t a[mma_m_tiles][4], bf[mma_n_tiles][2];
#pragma unroll
      for (int mt = 0; mt < mma_m_tiles; ++mt) mma_a_frag<F>(wr[mt][0], wr[mt][1], b, l.quad, a[mt]);
#pragma unroll
      for (int nt = 0; nt < mma_n_tiles; ++nt) mma_b_frag(xr[nt], b, l.quad, bf[nt]);
#pragma unroll
      for (int mt = 0; mt < mma_m_tiles; ++mt)
#pragma unroll
        for (int nt = 0; nt < mma_n_tiles; ++nt) mma_s8(c[mt][nt], a[mt], bf[nt]);
    }
    // The group's float terms: its tokens' scales (W8A8: one float; else scale and sum), the
    // weight block's scale and minimum (not W8A8: its channel scale comes at the end).
    using token_scale = std::conditional_t<w8, float, float2>;
    token_scale sc[mma_n_tiles][2];
    float wd[mma_m_tiles][2] = {}, wm[mma_m_tiles][2] = {};
#pragma unroll
    for (int nt = 0; nt < mma_n_tiles; ++nt)
#pragma unroll
      for (int j = 0; j < 2; ++j) sc[nt][j] = __ldg(static_cast<const token_scale*>(xs) + sr[nt][j] + g);
    if constexpr (!w8) {
#pragma unroll
      for (int mt = 0; mt < mma_m_tiles; ++mt)
#pragma unroll
        for (int h = 0; h < 2; ++h) q_block_scales<F>(wr[mt][h], g, wd[mt][h], wm[mt][h]);
    }
#pragma unroll
    for (int mt = 0; mt < mma_m_tiles; ++mt)
#pragma unroll
      for (int nt = 0; nt < mma_n_tiles; ++nt)
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const token_scale x = sc[nt][i & 1];
          float& a = acc[mt][nt][i];
          if constexpr (w8) a = w8_group_term(x, c[mt][nt][i], a);
          else a += q_block_term<F>(wd[mt][i >> 1], wm[mt][i >> 1], x.x, static_cast<int32_t>(x.y), c[mt][nt][i]);
        }
  }
#pragma unroll
  for (int mt = 0; mt < mma_m_tiles; ++mt)
#pragma unroll
    for (int nt = 0; nt < mma_n_tiles; ++nt)
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int64_t ch = c0 + 16 * mt + mma_c_channel(l, i), tok = t0 + 8 * nt + mma_c_token(l, i);
        float v = acc[mt][nt][i];
        if constexpr (w8) v *= w8_row_scale(wr[mt][i >> 1]);
        if (ch < n && tok < m) y[tok * ldy + ch] = v;
      }
}

// W8A8 activations: rows of k floats (ldx apart) -> int8 values with a float scale per group of G
// (w8_act.hpp): a warp per group, G / 32 values a lane. fixed > 0: the matrix's static scale.
template <int G>
__global__ void quantize_act_w8_kernel(const float* __restrict__ x, int64_t ldx, int64_t m, int64_t k, float fixed,
                                       int8_t* __restrict__ qs, float* __restrict__ scales) {
  constexpr int per_lane = G / 32;
  const int lane = threadIdx.x & 31;
  const int64_t ng = k / G;
  const int64_t grp = static_cast<int64_t>(blockIdx.x) * warps_per_block + (threadIdx.x >> 5);
  if (grp >= m * ng) return;
  const int64_t r = grp / ng, g = grp % ng;
  float v[per_lane];
  float amax = 0.f;
#pragma unroll
  for (int i = 0; i < per_lane; ++i) v[i] = x[r * ldx + G * g + 32 * i + lane], amax = fmaxf(amax, fabsf(v[i]));
  for (int o = 16; o > 0; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
  const float d = w8_act_scale(amax, fixed);
  const float id = d > 0.f ? 1.f / d : 0.f;
#pragma unroll
  for (int i = 0; i < per_lane; ++i) qs[r * k + G * g + 32 * i + lane] = act_quant(v[i], id);
  if (lane == 0) scales[r * ng + g] = d;
}

// W8A8 decode (M rows per pass, dp4a): a warp per output channel, lane l the groups l, l + 32, ...
// of G int8 values (128-bit loads of weights and activations), each taking the reference's group
// step; the warp's sum times the channel's scale.
template <int G, int M>
__global__ void matmul_w8_kernel(const uint8_t* __restrict__ w, int64_t row_bytes, int64_t n, int64_t k,
                                 const int8_t* __restrict__ qs, const float* __restrict__ scales, int64_t m,
                                 float* __restrict__ y, int64_t ldy) {
  constexpr int words = G / 4;
  const warp_task<M> t(m);
  if (t.col >= n) return;
  const uint8_t* wrow = w + t.col * row_bytes;
  const int64_t ng = k / G;
  float acc[M];
#pragma unroll
  for (int r = 0; r < M; ++r) acc[r] = 0.f;
  for_lane_blocks(t.lane, ng, [&](int64_t g) {
    int32_t wq[words];
    const int4* wv = reinterpret_cast<const int4*>(wrow + w8_row_header + G * g);
#pragma unroll
    for (int i = 0; i < words / 4; ++i) {
      const int4 v = __ldg(wv + i);
      wq[4 * i] = v.x, wq[4 * i + 1] = v.y, wq[4 * i + 2] = v.z, wq[4 * i + 3] = v.w;
    }
#pragma unroll
    for (int r = 0; r < M; ++r) {
      const int64_t row = t.r0 + (r < t.rows ? r : 0);  // rows past m reread row r0, never written
      const int4* xv = reinterpret_cast<const int4*>(qs + row * k + G * g);
      int32_t xq[words];
#pragma unroll
      for (int i = 0; i < words / 4; ++i) {
        const int4 v = __ldg(xv + i);
        xq[4 * i] = v.x, xq[4 * i + 1] = v.y, xq[4 * i + 2] = v.z, xq[4 * i + 3] = v.w;
      }
      acc[r] = w8_group_term(__ldg(scales + row * ng + g), i8_words_dot(wq, xq, words, 0), acc[r]);
    }
  });
  const float dw = w8_row_scale(wrow);
#pragma unroll
  for (int r = 0; r < M; ++r) acc[r] *= dw;
  t.store(acc, y, ldy);
}

// Rows of k floats (ldx apart) -> int16 values under one scale per row, and a sum per 32 values:
// a block per row (its largest magnitude first).
__global__ void quantize_act16_kernel(const float* __restrict__ x, int64_t ldx, int64_t k, int16_t* __restrict__ qs,
                                      int32_t* __restrict__ sums, float* __restrict__ scales) {
  __shared__ float part[warps_per_block];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int64_t r = blockIdx.x;
  const float* xr = x + r * ldx;
  float amax = 0.f;
  for (int64_t i = threadIdx.x; i < k; i += blockDim.x) amax = fmaxf(amax, fabsf(xr[i]));
  for (int o = 16; o > 0; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
  if (lane == 0) part[warp] = amax;
  __syncthreads();
  amax = part[0];
  for (int i = 1; i < warps_per_block; ++i) amax = fmaxf(amax, part[i]);
  const float d = act16_row_scale(amax);
  const float id = d > 0.f ? 1.f / d : 0.f;
  for (int64_t c = warp; c < k / 32; c += warps_per_block) {
    const int16_t q = act16_quant(xr[32 * c + lane], id);
    int sum = q;
    for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
    qs[r * k + 32 * c + lane] = q;
    if (lane == 0) sums[r * (k / 32) + c] = sum;
  }
  if (threadIdx.x == 0) scales[r] = d;
}

template <int G, int M>
__global__ void matmul_w4_kernel(const uint8_t* __restrict__ w, int64_t row_bytes, int64_t n, int64_t k,
                                 const int16_t* __restrict__ qs, const int32_t* __restrict__ sums,
                                 const float* __restrict__ scales, int64_t m, float* __restrict__ y, int64_t ldy) {
  constexpr int chunks = G / 32;
  const warp_task<M> t(m);
  if (t.col >= n) return;
  const int lane = t.lane, rows = t.rows;
  const int64_t col = t.col, r0 = t.r0;
  const uint8_t* wrow = w + col * row_bytes;
  const int64_t nc = k / 32;
  float acc[M];
#pragma unroll
  for (int r = 0; r < M; ++r) acc[r] = 0.f;
  for_lane_groups(lane, k / G, [&](int64_t g) {
    const uint8_t* grp = wrow + g * (4 + G / 2);
    const auto hdr = static_cast<uint32_t>(load_i32_a4(grp));
    int32_t wq[4 * chunks];
#pragma unroll
    for (int i = 0; i < 4 * chunks; ++i) wq[i] = load_i32_a4(grp + 4 + 4 * i);
#pragma unroll
    for (int r = 0; r < M; ++r) {
      const int64_t row = r0 + (r < rows ? r : 0);  // rows past m reread row r0, never written
      int32_t isum = 0, xsum = 0;
#pragma unroll
      for (int c = 0; c < chunks; ++c) {
        const int4* xv = reinterpret_cast<const int4*>(qs + row * k + g * G + 32 * c);
        const int4 a = __ldg(xv), b = __ldg(xv + 1), e = __ldg(xv + 2), f = __ldg(xv + 3);
        const int32_t xw[16] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w, e.x, e.y, e.z, e.w, f.x, f.y, f.z, f.w};
        isum = w4_chunk_isum(wq + 4 * c, xw, isum);
        xsum += __ldg(sums + row * nc + g * chunks + c);
      }
      acc[r] += w4_group_term(static_cast<uint16_t>(hdr & 0xffffu), static_cast<uint16_t>(hdr >> 16), isum, xsum);
    }
  });
  t.store(acc, y, ldy, scales);
}

// Calls launch(rows, grid, block) with the kernel's rows per pass (an integral_constant): M = 1, 2
// or 4 rows in one pass over the weights, else 8 rows per column block of the grid (ceil(m / 8)
// of them, which reread the weights from L2).
template <class Launch>
void by_rows(int64_t n, int64_t m, Launch&& launch) {
  const dim3 block(32 * warps_per_block);
  const auto cols = static_cast<unsigned>((n + warps_per_block - 1) / warps_per_block);
  if (m == 1) launch(std::integral_constant<int, 1>{}, dim3(cols, 1), block);
  else if (m == 2) launch(std::integral_constant<int, 2>{}, dim3(cols, 1), block);
  else if (m <= 4) launch(std::integral_constant<int, 4>{}, dim3(cols, 1), block);
  else launch(std::integral_constant<int, 8>{}, dim3(cols, static_cast<unsigned>((m + 7) / 8)), block);
}

template <int G>
void launch_w4(const weight_desc& w, const int16_t* qs, const int32_t* sums, const float* scales, int64_t m, float* y,
               int64_t ldy, cudaStream_t s) {
  by_rows(w.n, m, [&](auto rows, dim3 grid, dim3 block) {
    matmul_w4_kernel<G, decltype(rows)::value>
        <<<grid, block, 0, s>>>(w.data, w.row_bytes, w.n, w.k, qs, sums, scales, m, y, ldy);
  });
}

template <wfmt F, int GB>
void launch_mma(const weight_desc& w, const int8_t* qs, const void* xs, int64_t m, float* y, int64_t ldy,
                cudaStream_t s) {
  const dim3 grid(static_cast<unsigned>((m + mma_tokens - 1) / mma_tokens),
                  static_cast<unsigned>((w.n + mma_block_channels - 1) / mma_block_channels));
  matmul_mma_kernel<F, GB><<<grid, 32 * mma_warps, 0, s>>>(w.data, w.row_bytes, w.n, w.k, qs, xs, m, y, ldy);
}

template <int G>
void launch_w8(const weight_desc& w, const float* x, int64_t ldx, int64_t m, int8_t* qs, float* scales, float* y,
               int64_t ldy, cudaStream_t s) {
  const int64_t groups = m * (w.k / G);
  quantize_act_w8_kernel<G><<<static_cast<unsigned>((groups + warps_per_block - 1) / warps_per_block),
                              32 * warps_per_block, 0, s>>>(x, ldx, m, w.k, w.act_scale, qs, scales);
  if (m >= mma_min_rows) return launch_mma<wfmt::w8, G / 32>(w, qs, scales, m, y, ldy, s);
  by_rows(w.n, m, [&](auto rows, dim3 grid, dim3 block) {
    matmul_w8_kernel<G, decltype(rows)::value><<<grid, block, 0, s>>>(w.data, w.row_bytes, w.n, w.k, qs, scales, m, y, ldy);
  });
}

template <wfmt F>
void launch_q8(const weight_desc& w, const int8_t* qs, const float2* ds, int64_t m, float* y, int64_t ldy,
               cudaStream_t s) {
  if (m >= mma_min_rows) return launch_mma<F, 1>(w, qs, ds, m, y, ldy, s);
  by_rows(w.n, m, [&](auto rows, dim3 grid, dim3 block) {
    matmul_q8_kernel<F, decltype(rows)::value><<<grid, block, 0, s>>>(w.data, w.row_bytes, w.n, w.k, qs, ds, m, y, ldy);
  });
}

template <wfmt F>
void launch(const weight_desc& w, const float* x, int64_t ldx, int64_t m, float* y, int64_t ldy, cudaStream_t s) {
  by_rows(w.n, m, [&](auto rows, dim3 grid, dim3 block) {
    matmul_kernel<F, decltype(rows)::value><<<grid, block, 0, s>>>(w.data, w.row_bytes, w.n, w.k, x, ldx, m, y, ldy);
  });
}

}  // namespace

bool matmul(const weight_desc& w, const float* x, int64_t ldx, int64_t m, float* y, int64_t ldy, cudaStream_t s,
            void* act_scratch) {
  if (m <= 0 || w.n <= 0) return true;
  if (w.k % 32 != 0 || ldx % 4 != 0 || reinterpret_cast<uintptr_t>(x) % 16 != 0) return false;
  if (act_scratch && int8_act_format(w.fmt)) {
    if (reinterpret_cast<uintptr_t>(act_scratch) % 16 != 0) return false;
    auto* qs = static_cast<int8_t*>(act_scratch);
    auto* ds = reinterpret_cast<float2*>(qs + q8_act_scales_offset(m, w.k));
    const int64_t blocks = m * (w.k / 32);
    quantize_act_kernel<<<static_cast<unsigned>((blocks + warps_per_block - 1) / warps_per_block),
                          32 * warps_per_block, 0, s>>>(x, ldx, m, w.k, qs, ds);
    switch (w.fmt) {
      case wfmt::q4_0: launch_q8<wfmt::q4_0>(w, qs, ds, m, y, ldy, s); break;
      case wfmt::q4_1: launch_q8<wfmt::q4_1>(w, qs, ds, m, y, ldy, s); break;
      default: launch_q8<wfmt::q8_0>(w, qs, ds, m, y, ldy, s); break;
    }
    return true;
  }
  if (act_scratch && w8_act_format(w.fmt)) {
    if (reinterpret_cast<uintptr_t>(act_scratch) % 16 != 0 || w.row_bytes % 16 != 0) return false;
    auto* qs = static_cast<int8_t*>(act_scratch);
    auto* scales = reinterpret_cast<float*>(qs + w8_act_scales_offset(m, w.k));
    if (w8_group(w.k) == 64) launch_w8<64>(w, x, ldx, m, qs, scales, y, ldy, s);
    else launch_w8<32>(w, x, ldx, m, qs, scales, y, ldy, s);
    return true;
  }
  if (act_scratch && int16_act_format(w.fmt)) {
    if (reinterpret_cast<uintptr_t>(act_scratch) % 16 != 0 || w.k % w4_group(w.fmt) != 0) return false;
    auto* base = static_cast<uint8_t*>(act_scratch);
    auto* qs = reinterpret_cast<int16_t*>(base);
    auto* sums = reinterpret_cast<int32_t*>(base + q16_act_sums_offset(m, w.k));
    auto* scales = reinterpret_cast<float*>(base + q16_act_scales_offset(m, w.k));
    quantize_act16_kernel<<<static_cast<unsigned>(m), 32 * warps_per_block, 0, s>>>(x, ldx, w.k, qs, sums, scales);
    switch (w.fmt) {
      case wfmt::w4g32: launch_w4<32>(w, qs, sums, scales, m, y, ldy, s); break;
      case wfmt::w4g64: launch_w4<64>(w, qs, sums, scales, m, y, ldy, s); break;
      default: launch_w4<128>(w, qs, sums, scales, m, y, ldy, s); break;
    }
    return true;
  }
  switch (w.fmt) {
    case wfmt::f32: launch<wfmt::f32>(w, x, ldx, m, y, ldy, s); break;
    case wfmt::f16: launch<wfmt::f16>(w, x, ldx, m, y, ldy, s); break;
    case wfmt::bf16: launch<wfmt::bf16>(w, x, ldx, m, y, ldy, s); break;
    case wfmt::q4_0: launch<wfmt::q4_0>(w, x, ldx, m, y, ldy, s); break;
    case wfmt::q4_1: launch<wfmt::q4_1>(w, x, ldx, m, y, ldy, s); break;
    case wfmt::q8_0: launch<wfmt::q8_0>(w, x, ldx, m, y, ldy, s); break;
    case wfmt::w8: launch<wfmt::w8>(w, x, ldx, m, y, ldy, s); break;
    case wfmt::w4g32: launch<wfmt::w4g32>(w, x, ldx, m, y, ldy, s); break;
    case wfmt::w4g64: launch<wfmt::w4g64>(w, x, ldx, m, y, ldy, s); break;
    case wfmt::w4g128: launch<wfmt::w4g128>(w, x, ldx, m, y, ldy, s); break;
  }
  return true;
}

}  // namespace fw::cuda
