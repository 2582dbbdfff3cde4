#include "runtime/quant/scale_search.hpp"

#include <algorithm>
#include <cmath>

#include "kernels/cpu/matmul.hpp"
#include "kernels/format/fw_formats.hpp"
#include "kernels/format/quant_ref.hpp"
#include <cstring>

namespace fw {
namespace {

cpu::weight_view view_of(const uint8_t* data, ggml_type type, int64_t k, int64_t n) {
  return cpu::weight_view{type, data, k, n, row_bytes(type_traits(type), static_cast<uint64_t>(k))};
}

}  // namespace

void quantize_w4_group_weighted(const float* src, int g, const float* imp, uint8_t* dst) {
  const size_t gb = w4_group_bytes(g);
  float back[128];
  uint8_t trial[w4_group_bytes(128)];
  auto weighted_error = [&] {
    fw_format::dequantize_w4_group(trial, g, back);
    double e = 0;
    for (int i = 0; i < g; ++i) {
      const double d = static_cast<double>(src[i]) - back[i];
      e += d * d * imp[i];
    }
    return e;
  };
  double best = INFINITY;
  for (float clip : {1.f, 0.95f, 0.9f, 0.85f, 0.8f, 0.75f}) {
    fw_format::quantize_w4_group(src, g, trial, clip);
    double e = weighted_error();
    if (e < best) best = e, std::memcpy(dst, trial, gb);
    // Refit scale and offset by importance-weighted least squares on the rounded values (the
    // idea of llama.cpp's weighted quantizers), re-round, twice.
    for (int it = 0; it < 2; ++it) {
      const uint8_t* qs = trial + sizeof(w4_group_header);
      double sw = 0, sq = 0, sqq = 0, sx = 0, sqx = 0;
      for (int c = 0; c < g / 32; ++c)
        for (int j = 0; j < 32; ++j) {
          const int i = c * 32 + j;
          const double q = j < 16 ? (qs[c * 16 + j] & 0x0f) : (qs[c * 16 + j - 16] >> 4);
          const double wi = std::max(imp[i], 1e-12f);
          sw += wi, sq += wi * q, sqq += wi * q * q, sx += wi * src[i], sqx += wi * q * src[i];
        }
      const double det = sqq * sw - sq * sq;
      if (!(det > 0)) break;
      const double d = (sw * sqx - sq * sx) / det, m = (sqq * sx - sq * sqx) / det;
      if (!(d > 0) || !std::isfinite(m)) break;
      fw_format::requantize_w4_group(src, g, static_cast<float>(d), static_cast<float>(m), trial);
      e = weighted_error();
      if (e < best) best = e, std::memcpy(dst, trial, gb);
    }
  }
}

std::vector<uint8_t> quantize_rows(const std::vector<float>& w, int64_t k, ggml_type type,
                                   const std::vector<float>* importance) {
  const auto tr = type_traits(type);
  const size_t rb = row_bytes(tr, static_cast<uint64_t>(k));
  const int64_t n = static_cast<int64_t>(w.size()) / k;
  std::vector<uint8_t> out(rb * static_cast<size_t>(n));
  const bool w4 = type == ggml_type::fw_w4a16_g32 || type == ggml_type::fw_w4a16_g64 || type == ggml_type::fw_w4a16_g128;
  if (!w4 || !importance) {
    for (int64_t r = 0; r < n; ++r) quantize_row_ref(type, w.data() + r * k, out.data() + r * rb, k);
    return out;
  }
  const int g = static_cast<int>(tr.block_size);
  const size_t gb = w4_group_bytes(g);
  for (int64_t r = 0; r < n; ++r)
    for (int64_t b = 0; b < k / g; ++b)
      quantize_w4_group_weighted(w.data() + r * k + b * g, g, importance->data() + b * g, out.data() + r * rb + b * gb);
  return out;
}

std::vector<float> channel_mean_square(const float* x, int64_t rows, int64_t width, const std::vector<float>& s) {
  std::vector<double> acc(static_cast<size_t>(width), 0.0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < width; ++j) acc[j] += static_cast<double>(x[r * width + j]) * x[r * width + j];
  std::vector<float> out(static_cast<size_t>(width));
  for (int64_t j = 0; j < width; ++j) {
    const double sj = s.empty() ? 1.0 : s[j];
    out[j] = static_cast<float>(acc[j] / std::max<int64_t>(rows, 1) / (sj * sj));
  }
  return out;
}

std::vector<float> error_meter::importance(const std::vector<float>& s) const {
  return channel_mean_square(x_, rows_, g_.k, s);
}

error_meter::error_meter(const product_group& g, const float* x, int64_t rows, cpu::thread_pool& pool)
    : g_(g), x_(x), rows_(rows), pool_(pool) {
  const auto kern = cpu::select_dot_kernel(ggml_type::f32, cpu::best_simd_level());
  cpu::matmul_scratch scratch;
  for (const auto* w : g.weights) {
    const int64_t n = static_cast<int64_t>(w->size()) / g.k;
    std::vector<float> y(static_cast<size_t>(rows * n));
    const auto v = view_of(reinterpret_cast<const uint8_t*>(w->data()), ggml_type::f32, g.k, n);
    cpu::matmul(v, kern, x, g.k, rows, y.data(), n, pool, scratch);
    double norm = 0;
    for (float f : y) norm += static_cast<double>(f) * f;
    y_ref_.push_back(std::move(y));
    ref_norm_.push_back(norm);
  }
}

double residual_share(const std::vector<float>& w, int64_t k, const float* x, const float* r, int64_t r_width,
                      int64_t rows, cpu::thread_pool& pool) {
  if (rows <= 0 || k <= 0) return 1.0;
  const int64_t n = static_cast<int64_t>(w.size()) / k;
  std::vector<float> y(static_cast<size_t>(rows * n));
  cpu::matmul_scratch scratch;
  cpu::matmul(view_of(reinterpret_cast<const uint8_t*>(w.data()), ggml_type::f32, k, n),
              cpu::select_dot_kernel(ggml_type::f32, cpu::best_simd_level()), x, k, rows, y.data(), n, pool, scratch);
  double sum = 0;
  for (int64_t i = 0; i < rows; ++i) {
    double y2 = 0, r2 = 0;
    for (int64_t j = 0; j < n; ++j) y2 += static_cast<double>(y[i * n + j]) * y[i * n + j];
    for (int64_t j = 0; j < r_width; ++j) r2 += static_cast<double>(r[i * r_width + j]) * r[i * r_width + j];
    if (r2 > 0) sum += y2 / r2;
  }
  return sum / static_cast<double>(rows);
}

double error_meter::error(const std::vector<float>& s, ggml_type type, float act_scale, bool clip_search,
                          std::vector<double>* per_matrix) {
  const auto imp = clip_search ? importance(s) : std::vector<float>{};
  std::vector<std::vector<uint8_t>> q;
  for (const auto* m : g_.weights) {
    std::vector<float> w = *m;
    scale_columns(w, g_.k, s);
    q.push_back(quantize_rows(w, g_.k, type, clip_search ? &imp : nullptr));
  }
  return error_of(s, type, q, act_scale, per_matrix);
}

double error_meter::error_of(const std::vector<float>& s, ggml_type type, const std::vector<std::vector<uint8_t>>& q,
                             float act_scale, std::vector<double>* per_matrix) {
  const int64_t k = g_.k;
  std::vector<float> xs(x_, x_ + rows_ * k);
  if (!s.empty())
    for (int64_t r = 0; r < rows_; ++r)
      for (int64_t j = 0; j < k; ++j) xs[r * k + j] /= s[j];
  const auto kern = cpu::select_dot_kernel(type, cpu::best_simd_level());
  cpu::matmul_scratch scratch;
  double err = 0, norm = 0;
  if (per_matrix) per_matrix->clear();
  for (size_t m = 0; m < g_.weights.size(); ++m) {
    const int64_t n = static_cast<int64_t>(g_.weights[m]->size()) / k;
    auto v = view_of(q[m].data(), type, k, n);
    v.act_scale = act_scale;
    std::vector<float> y(static_cast<size_t>(rows_ * n));
    cpu::matmul(v, kern, xs.data(), k, rows_, y.data(), n, pool_, scratch);
    double e = 0;
    const auto& ref = y_ref_[m];
    for (size_t i = 0; i < y.size(); ++i) {
      const double d = static_cast<double>(y[i]) - ref[i];
      e += d * d;
    }
    if (per_matrix) per_matrix->push_back(ref_norm_[m] > 0 ? e / ref_norm_[m] : 0);
    err += e;
    norm += ref_norm_[m];
  }
  return norm > 0 ? err / norm : 0;
}

std::vector<float> smoothquant_scales(const std::vector<float>& x_max, const product_group& g, double alpha) {
  const int64_t k = g.k;
  std::vector<float> w_max(static_cast<size_t>(k), 0.f);
  for (const auto* w : g.weights)
    for (size_t i = 0; i < w->size(); ++i) {
      const size_t j = i % static_cast<size_t>(k);
      w_max[j] = std::max(w_max[j], std::fabs((*w)[i]));
    }
  std::vector<float> s(static_cast<size_t>(k), 1.f);
  for (int64_t j = 0; j < k; ++j) {
    if (!(x_max[j] > 0) || !(w_max[j] > 0)) continue;
    const double v = std::pow(x_max[j], alpha) / std::pow(w_max[j], 1 - alpha);
    s[j] = static_cast<float>(std::clamp(v, 1e-3, 1e3));
  }
  return s;
}

std::vector<float> awq_scales(const std::vector<float>& x_mean, double alpha) {
  std::vector<float> s(x_mean.size());
  float lo = INFINITY, hi = 0;
  for (size_t j = 0; j < s.size(); ++j) {
    s[j] = static_cast<float>(std::pow(std::max(x_mean[j], 1e-4f), alpha));
    lo = std::min(lo, s[j]), hi = std::max(hi, s[j]);
  }
  const float norm = std::sqrt(lo * hi);
  if (norm > 0)
    for (auto& v : s) v /= norm;
  return s;
}

void tie_to_kv_heads(std::vector<float>& s, int64_t head_dim, int64_t gqa) {
  if (s.empty() || gqa <= 1) return;
  const int64_t group = head_dim * gqa;
  for (int64_t g0 = 0; g0 + group <= static_cast<int64_t>(s.size()); g0 += group)
    for (int64_t d = 0; d < head_dim; ++d) {
      double log_sum = 0;
      for (int64_t h = 0; h < gqa; ++h) log_sum += std::log(s[g0 + h * head_dim + d]);
      const auto v = static_cast<float>(std::exp(log_sum / static_cast<double>(gqa)));
      for (int64_t h = 0; h < gqa; ++h) s[g0 + h * head_dim + d] = v;
    }
}

void scale_columns(std::vector<float>& w, int64_t k, const std::vector<float>& s) {
  if (s.empty()) return;
  for (size_t i = 0; i < w.size(); ++i) w[i] *= s[i % static_cast<size_t>(k)];
}

}  // namespace fw
