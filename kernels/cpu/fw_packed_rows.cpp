#include "kernels/cpu/fw_packed_rows.hpp"

#include <cstring>
#include <vector>

#include "kernels/cpu/vec_dot.hpp"

namespace fw::cpu::packed {
namespace {

constexpr int group = static_cast<int>(packed_group_rows);

/// q of channel e (0 <= e < G) of one fw_w4a16 group's nibbles (chunk layout of fw_formats.hpp).
inline uint8_t w4_q(const uint8_t* qs, int e) {
  const uint8_t b = qs[(e / 32) * 16 + e % 16];
  return e % 32 < 16 ? (b & 0x0f) : (b >> 4);
}

}  // namespace

void pack_w8a8(const void* src, size_t row_stride, int64_t n_rows, int64_t k, void* dst) {
  const size_t rb = sizeof(w8_row_header) + static_cast<size_t>(k);
  const auto* s = static_cast<const uint8_t*>(src);
  auto* d = static_cast<uint8_t*>(dst);
  const int64_t n_packed = n_rows / group * group;
  for (int64_t g = 0; g < n_packed; g += group) {
    uint8_t* gp = d + g * rb;
    std::memset(gp + 16 * k, 0, w8_tail);
    for (int r = 0; r < group; ++r) {
      const uint8_t* row = s + (g + r) * row_stride;
      std::memcpy(gp + 16 * k + 4 * r, row, 4);  // the row scale
      for (int64_t p = 0; p < k / 4; ++p)
        for (int i = 0; i < 4; ++i) gp[64 * p + 4 * r + i] = row[sizeof(w8_row_header) + 4 * p + i] ^ 0x80;
    }
  }
  for (int64_t i = n_packed; i < n_rows; ++i) std::memcpy(d + i * rb, s + i * row_stride, rb);
}

template <int G>
void pack_w4a16(const void* src, size_t row_stride, int64_t n_rows, int64_t k, void* dst) {
  const int64_t ng = k / G;
  const size_t rb = static_cast<size_t>(ng) * w4_group_bytes(G);
  const auto* s = static_cast<const uint8_t*>(src);
  auto* d = static_cast<uint8_t*>(dst);
  const int64_t n_packed = n_rows / group * group;
  for (int64_t g0 = 0; g0 < n_packed; g0 += group) {
    for (int64_t g = 0; g < ng; ++g) {
      uint8_t* blk = d + g0 * rb + g * w4_block<G>;
      for (int r = 0; r < group; ++r) {
        const uint8_t* sg = s + (g0 + r) * row_stride + g * w4_group_bytes(G);
        const auto* h = reinterpret_cast<const w4_group_header*>(sg);
        std::memcpy(blk + 2 * r, &h->d, 2);
        std::memcpy(blk + 32 + 2 * r, &h->m, 2);
        const uint8_t* qs = sg + sizeof(w4_group_header);
        for (int v = 0; v < G / 8; ++v) {
          uint8_t e[8];
          for (int i = 0; i < 8; ++i) e[i] = w4_q(qs, 8 * v + i);
          uint8_t* lane = blk + 64 + 64 * v + 4 * r;
          lane[0] = static_cast<uint8_t>(e[0] | e[2] << 4), lane[1] = static_cast<uint8_t>(e[4] | e[6] << 4);
          lane[2] = static_cast<uint8_t>(e[1] | e[3] << 4), lane[3] = static_cast<uint8_t>(e[5] | e[7] << 4);
        }
      }
    }
  }
  for (int64_t i = n_packed; i < n_rows; ++i) std::memcpy(d + i * rb, s + i * row_stride, rb);
}

const float* w4_group_xsums(const void* x, size_t x_stride, int64_t n_x, int64_t k, int g) {
  thread_local std::vector<float> buf;
  const int64_t ng = k / g;
  buf.resize(static_cast<size_t>(n_x * ng));
  const auto* xp = static_cast<const uint8_t*>(x);
  for (int64_t j = 0; j < n_x; ++j) {
    const auto* sums = reinterpret_cast<const int32_t*>(xp + j * x_stride + act_row_header + 2 * k);
    for (int64_t gi = 0; gi < ng; ++gi) {
      int32_t s = 0;
      for (int c = 0; c < g / 32; ++c) s += sums[gi * (g / 32) + c];
      buf[j * ng + gi] = static_cast<float>(s);
    }
  }
  return buf.data();
}

template void pack_w4a16<32>(const void*, size_t, int64_t, int64_t, void*);
template void pack_w4a16<64>(const void*, size_t, int64_t, int64_t, void*);
template void pack_w4a16<128>(const void*, size_t, int64_t, int64_t, void*);

}  // namespace fw::cpu::packed
