#include "kernels/cpu/packed_rows.hpp"

#include <cstring>
#include <vector>

#include "kernels/cpu/vec_dot.hpp"
#include "kernels/format/ggml_type.hpp"

namespace fw::cpu::packed {
namespace {

constexpr int group = static_cast<int>(packed_group_rows);

// One block of one row into its place in the group's block column gb.
struct q4_0_put {
  using block = block_q4_0;
  static constexpr size_t group_block = q4_0_layout::group_block;
  static void put(const block& s, int r, uint8_t* gb) {
    for (int t = 0; t < 4; ++t) std::memcpy(gb + 64 * t + 4 * r, s.qs + 4 * t, 4);
    std::memcpy(gb + q4_0_layout::d_offset + 2 * r, &s.d, 2);
  }
};
struct q4_1_put {
  using block = block_q4_1;
  static constexpr size_t group_block = q4_1_layout::group_block;
  static void put(const block& s, int r, uint8_t* gb) {
    for (int t = 0; t < 4; ++t) std::memcpy(gb + 64 * t + 4 * r, s.qs + 4 * t, 4);
    std::memcpy(gb + q4_1_layout::d_offset + 2 * r, &s.d, 2);
    std::memcpy(gb + q4_1_layout::m_offset + 2 * r, &s.m, 2);
  }
};
struct q8_0_put {
  using block = block_q8_0;
  static constexpr size_t group_block = q8_0_layout::group_block;
  static void put(const block& s, int r, uint8_t* gb) {
    for (int t = 0; t < 8; ++t) std::memcpy(gb + 64 * t + 4 * r, s.qs + 4 * t, 4);
    std::memcpy(gb + q8_0_layout::d_offset + 2 * r, &s.d, 2);
  }
};
static_assert(q4_0_put::group_block == group * sizeof(block_q4_0));
static_assert(q4_1_put::group_block == group * sizeof(block_q4_1));
static_assert(q8_0_put::group_block == group * sizeof(block_q8_0));

template <class F>
void pack(const void* src, size_t row_stride, int64_t n_rows, int64_t k, void* dst) {
  using block = typename F::block;
  const int64_t nb = k / 32;
  const size_t rb = static_cast<size_t>(nb) * sizeof(block);
  const auto* s = static_cast<const uint8_t*>(src);
  auto* d = static_cast<uint8_t*>(dst);
  const int64_t n_packed = n_rows / group * group;
  for (int64_t g = 0; g < n_packed; g += group) {
    uint8_t* gp = d + g * rb;
    for (int64_t b = 0; b < nb; ++b)
      for (int r = 0; r < group; ++r)
        F::put(reinterpret_cast<const block*>(s + (g + r) * row_stride)[b], r, gp + b * F::group_block);
  }
  for (int64_t i = n_packed; i < n_rows; ++i) std::memcpy(d + i * rb, s + i * row_stride, rb);
}

template <class Elem>
void pack_float(const void* src, size_t row_stride, int64_t n_rows, int64_t k, void* dst) {
  const size_t rb = static_cast<size_t>(k) * sizeof(Elem);
  const auto* s = static_cast<const uint8_t*>(src);
  auto* d = static_cast<uint8_t*>(dst);
  const int64_t n_packed = n_rows / group * group;
  for (int64_t g = 0; g < n_packed; g += group) {
    auto* out = reinterpret_cast<Elem*>(d + g * rb);
    for (int r = 0; r < group; ++r) {
      const auto* row = reinterpret_cast<const Elem*>(s + (g + r) * row_stride);
      for (int64_t i = 0; i < k; ++i) out[i * group + r] = row[i];
    }
  }
  for (int64_t i = n_packed; i < n_rows; ++i) std::memcpy(d + i * rb, s + i * row_stride, rb);
}

}  // namespace

void pack_q4_0(const void* src, size_t row_stride, int64_t n_rows, int64_t k, void* dst) {
  pack<q4_0_put>(src, row_stride, n_rows, k, dst);
}
void pack_q4_1(const void* src, size_t row_stride, int64_t n_rows, int64_t k, void* dst) {
  pack<q4_1_put>(src, row_stride, n_rows, k, dst);
}
void pack_q8_0(const void* src, size_t row_stride, int64_t n_rows, int64_t k, void* dst) {
  pack<q8_0_put>(src, row_stride, n_rows, k, dst);
}

void pack_f32(const void* src, size_t row_stride, int64_t n_rows, int64_t k, void* dst) {
  pack_float<float>(src, row_stride, n_rows, k, dst);
}
void pack_f16(const void* src, size_t row_stride, int64_t n_rows, int64_t k, void* dst) {
  pack_float<uint16_t>(src, row_stride, n_rows, k, dst);
}
void pack_bf16(const void* src, size_t row_stride, int64_t n_rows, int64_t k, void* dst) {
  pack_float<uint16_t>(src, row_stride, n_rows, k, dst);
}

const float* q8x_min_terms(const void* x, size_t x_stride, int64_t n_x, int64_t nb) {
  thread_local std::vector<float> buf;
  buf.resize(static_cast<size_t>(n_x * nb));
  const auto* xp = static_cast<const uint8_t*>(x);
  for (int64_t j = 0; j < n_x; ++j) {
    const auto* xb = reinterpret_cast<const block_q8x*>(xp + j * x_stride);
    for (int64_t b = 0; b < nb; ++b) buf[j * nb + b] = xb[b].d * static_cast<float>(xb[b].sum);
  }
  return buf.data();
}

}  // namespace fw::cpu::packed
