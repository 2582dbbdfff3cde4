// weight_chunk: the weight formats the CUDA kernels read, decoded 32 elements at a time. Every
// format's row is a sequence of 32-element chunks (a Q4_0/Q4_1/Q8_0 block, 32 f32/f16/bf16
// values, 32 int8 values of a fw_w8a8 row under its row scale, or one 32-element slice of a
// fw_w4a16 group under its group's scale and offset), so one decoder serves the products, the
// embedding lookup and the tests. Layouts: kernels/format/ggml_type.hpp and fw_formats.hpp.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>

#include "kernels/cuda/cuda_compat.hpp"

namespace fw::cuda {

/// A weight format as the kernels name it (the backend maps ggml_type ids onto these).
enum class wfmt : uint8_t { f32, f16, bf16, q4_0, q4_1, q8_0, w8, w4g32, w4g64, w4g128 };

/// Elements per fw_w4a16 group of the format (0 for the others).
FW_HD int w4_group(wfmt f) { return f == wfmt::w4g32 ? 32 : f == wfmt::w4g64 ? 64 : f == wfmt::w4g128 ? 128 : 0; }

/// Bytes of a row of k elements (k a multiple of 32, of the group for fw_w4a16).
FW_HD int64_t row_bytes_of(wfmt f, int64_t k) {
  switch (f) {
    case wfmt::f32: return 4 * k;
    case wfmt::f16:
    case wfmt::bf16: return 2 * k;
    case wfmt::q4_0: return k / 32 * 18;
    case wfmt::q4_1: return k / 32 * 20;
    case wfmt::q8_0: return k / 32 * 34;
    case wfmt::w8: return 32 + k;
    default: return k / w4_group(f) * (4 + w4_group(f) / 2);
  }
}

/// Decodes chunk j (elements 32 j .. 32 j + 31) of a row of format F into out.
template <wfmt F>
FW_HD void decode_chunk(const uint8_t* row, int64_t j, float* out) {
  if constexpr (F == wfmt::f32) {
    FW_UNROLL for (int i = 0; i < 32; ++i) out[i] = load_f32(row + (32 * j + i) * 4);
  } else if constexpr (F == wfmt::f16) {
    FW_UNROLL for (int i = 0; i < 32; ++i) out[i] = half_to_float(load_u16(row + (32 * j + i) * 2));
  } else if constexpr (F == wfmt::bf16) {
    FW_UNROLL for (int i = 0; i < 32; ++i) out[i] = bf16_to_float(load_u16(row + (32 * j + i) * 2));
  } else if constexpr (F == wfmt::q4_0) {
    const uint8_t* b = row + j * 18;
    const float d = half_to_float(load_u16(b));
    FW_UNROLL for (int i = 0; i < 16; ++i) {
      out[i] = d * static_cast<float>((b[2 + i] & 0x0f) - 8);
      out[i + 16] = d * static_cast<float>((b[2 + i] >> 4) - 8);
    }
  } else if constexpr (F == wfmt::q4_1) {
    const uint8_t* b = row + j * 20;
    const float d = half_to_float(load_u16(b)), m = half_to_float(load_u16(b + 2));
    FW_UNROLL for (int i = 0; i < 16; ++i) {
      out[i] = d * static_cast<float>(b[4 + i] & 0x0f) + m;
      out[i + 16] = d * static_cast<float>(b[4 + i] >> 4) + m;
    }
  } else if constexpr (F == wfmt::q8_0) {
    const uint8_t* b = row + j * 34;
    const float d = half_to_float(load_u16(b));
    FW_UNROLL for (int i = 0; i < 32; ++i) out[i] = d * static_cast<float>(static_cast<int8_t>(b[2 + i]));
  } else if constexpr (F == wfmt::w8) {
    const float d = load_f32(row);
    const uint8_t* q = row + 32 + 32 * j;
    FW_UNROLL for (int i = 0; i < 32; ++i) out[i] = d * static_cast<float>(static_cast<int8_t>(q[i]));
  } else {
    constexpr int g = F == wfmt::w4g32 ? 32 : F == wfmt::w4g64 ? 64 : 128;
    constexpr int per_group = g / 32;
    const uint8_t* grp = row + (j / per_group) * (4 + g / 2);
    const float d = half_to_float(load_u16(grp)), m = half_to_float(load_u16(grp + 2));
    const uint8_t* q = grp + 4 + (j % per_group) * 16;
    FW_UNROLL for (int i = 0; i < 16; ++i) {
      out[i] = d * static_cast<float>(q[i] & 0x0f) + m;
      out[i + 16] = d * static_cast<float>(q[i] >> 4) + m;
    }
  }
}

/// decode_chunk with the format chosen at run time (host tests, the embedding lookup).
FW_HD void decode_chunk(wfmt f, const uint8_t* row, int64_t j, float* out) {
  switch (f) {
    case wfmt::f32: decode_chunk<wfmt::f32>(row, j, out); break;
    case wfmt::f16: decode_chunk<wfmt::f16>(row, j, out); break;
    case wfmt::bf16: decode_chunk<wfmt::bf16>(row, j, out); break;
    case wfmt::q4_0: decode_chunk<wfmt::q4_0>(row, j, out); break;
    case wfmt::q4_1: decode_chunk<wfmt::q4_1>(row, j, out); break;
    case wfmt::q8_0: decode_chunk<wfmt::q8_0>(row, j, out); break;
    case wfmt::w8: decode_chunk<wfmt::w8>(row, j, out); break;
    case wfmt::w4g32: decode_chunk<wfmt::w4g32>(row, j, out); break;
    case wfmt::w4g64: decode_chunk<wfmt::w4g64>(row, j, out); break;
    case wfmt::w4g128: decode_chunk<wfmt::w4g128>(row, j, out); break;
  }
}

}  // namespace fw::cuda
