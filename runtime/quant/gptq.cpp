#include "runtime/quant/gptq.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "kernels/format/fw_formats.hpp"
#include "kernels/format/quant_ref.hpp"
#include "runtime/base/cholesky.hpp"
#include "runtime/quant/scale_search.hpp"

namespace fw {

expected<std::vector<double>> gptq_inverse_factor(std::vector<double> h, int64_t k, double damp) {
  const auto K = static_cast<size_t>(k);
  double mean_diag = 0;
  int64_t live = 0;
  for (size_t j = 0; j < K; ++j)
    if (h[j * K + j] > 0) mean_diag += h[j * K + j], ++live;
  mean_diag = live ? mean_diag / static_cast<double>(live) : 1.0;
  for (size_t j = 0; j < K; ++j) {
    if (!(h[j * K + j] > 0)) h[j * K + j] = 1;  // a channel never active
    h[j * K + j] += damp * mean_diag;
  }
  // With J the order reversal: if J H J = L L^T (Cholesky, L lower), then H = V V^T with the
  // upper V = J L J, so H^-1 = V^-T V^-1 and U = V^-1 = J L^-1 J.
  std::vector<double> L(K * K);
  for (size_t i = 0; i < K; ++i)
    for (size_t j = 0; j < K; ++j) L[i * K + j] = h[(K - 1 - i) * K + (K - 1 - j)];
  if (const int64_t bad = cholesky_lower(L, k); bad >= 0)
    return make_error(errc::invalid_argument, "GPTQ: the input's second-moment matrix is not positive definite at channel " +
                                                  std::to_string(k - 1 - bad));
  // M = L^-1 by forward substitution, one column at a time (stored as rows of M^T).
  std::vector<double> mt(K * K, 0.0);
  for (size_t j = 0; j < K; ++j) {
    double* m = &mt[j * K];
    m[j] = 1.0 / L[j * K + j];
    for (size_t i = j + 1; i < K; ++i) {
      const double* li = &L[i * K];
      double s = 0;
      for (size_t p = j; p < i; ++p) s -= li[p] * m[p];
      m[i] = s / li[i];
    }
  }
  // U[a][b] = M[K-1-a][K-1-b] = M^T[K-1-b][K-1-a].
  std::vector<double> u(K * K, 0.0);
  for (size_t a = 0; a < K; ++a)
    for (size_t b = a; b < K; ++b) u[a * K + b] = mt[(K - 1 - b) * K + (K - 1 - a)];
  return u;
}

bool gptq_supports(ggml_type type) {
  return type == ggml_type::fw_w4a16_g32 || type == ggml_type::fw_w4a16_g64 || type == ggml_type::fw_w4a16_g128;
}

std::vector<uint8_t> gptq_quantize_rows(const std::vector<float>& w, int64_t k, ggml_type type,
                                        const std::vector<double>& u, const std::vector<float>& importance,
                                        cpu::thread_pool& pool, const std::vector<int32_t>& order) {
  const auto K = static_cast<size_t>(k);
  const int g = static_cast<int>(type_traits(type).block_size);
  const size_t gb = w4_group_bytes(g), rb = row_bytes(type_traits(type), static_cast<uint64_t>(k));
  const int64_t n = static_cast<int64_t>(w.size()) / k;
  std::vector<uint8_t> out(rb * static_cast<size_t>(n));
  // U in float, its diagonal inverted: the update of channel c after channel j is
  // w_c -= (w_j - q_j) / U_jj * U_jc.
  std::vector<float> uf(K * K, 0.f), inv_diag(K);
  for (size_t j = 0; j < K; ++j) {
    inv_diag[j] = static_cast<float>(1.0 / u[j * K + j]);
    for (size_t c = j + 1; c < K; ++c) uf[j * K + c] = static_cast<float>(u[j * K + c]);
  }
  std::vector<float> ones;
  const float* imp = importance.data();
  if (importance.size() != K) ones.assign(K, 1.f), imp = ones.data();
  const bool ordered = order.size() == K;
  constexpr int64_t tile = 8;  // rows that share each row of U as it streams by
  pool.for_each((n + tile - 1) / tile, [&](int64_t t, int) {
    const int64_t r0 = t * tile, rows = std::min(tile, n - r0);
    std::vector<float> cur(w.begin() + r0 * k, w.begin() + (r0 + rows) * k);  // the rows as errors leave them
    std::vector<float> done(cur.size());  // the quantized values, in the channels' own order
    const int64_t groups = k / g;
    std::vector<float> gd(static_cast<size_t>(rows * groups)), gm(gd.size());
    uint8_t group[w4_group_bytes(128)];
    auto choose_group = [&](int64_t r, int64_t b, const float* src) {
      quantize_w4_group_weighted(src, g, imp + b * g, group);
      const auto* h = reinterpret_cast<const w4_group_header*>(group);
      gd[r * groups + b] = fp16_to_fp32(h->d), gm[r * groups + b] = fp16_to_fp32(h->m);
    };
    if (ordered) {  // every group from the weights before any update; then the columns in order
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t b = 0; b < groups; ++b) choose_group(r, b, &cur[r * K + b * g]);
      std::vector<float> orig(cur);
      for (int64_t r = 0; r < rows; ++r)
        for (size_t j = 0; j < K; ++j) cur[r * K + j] = orig[r * K + order[j]];
    }
    for (size_t j = 0; j < K; ++j) {
      const size_t c = ordered ? static_cast<size_t>(order[j]) : j;  // the channel quantized now
      const int64_t b = static_cast<int64_t>(c) / g;
      if (!ordered && c % static_cast<size_t>(g) == 0)
        for (int64_t r = 0; r < rows; ++r) choose_group(r, b, &cur[r * K + j]);
      const float* uj = &uf[j * K];
      for (int64_t r = 0; r < rows; ++r) {
        float* row = &cur[r * K];
        const float d = gd[r * groups + b], m = gm[r * groups + b];
        const float id = d > 0 ? 1.f / d : 0.f;
        const float q = std::clamp(std::nearbyint((row[j] - m) * id), 0.f, 15.f);
        const float v = d * q + m;
        done[r * K + c] = v;
        const float e = (row[j] - v) * inv_diag[j];
        for (size_t i = j + 1; i < K; ++i) row[i] -= e * uj[i];
      }
    }
    // The values are on their groups' grids: re-rounding with the same scale and offset gives
    // them back.
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t b = 0; b < k / g; ++b)
        fw_format::requantize_w4_group(&done[r * K + b * g], g, gd[r * groups + b], gm[r * groups + b],
                                       out.data() + (r0 + r) * rb + b * gb);
  });
  return out;
}

}  // namespace fw
