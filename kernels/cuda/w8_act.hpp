// w8_act: the integer products of the CUDA kernels for flywheel's W8A8 weights (fw_w8a8: int8
// values under one float scale per output channel), with the CPU's semantics (kernels/ref
// fw_dot_ref): each activation row quantized once per product to int8 with one float scale per
// group of w8_group(k) channels (64 where k allows, else 32) - max |x| / 127 of the group, or the
// matrix's static scale from calibration (weight_desc::act_scale) - then per group one integer
// dot, acc = fma(group scale, (float) dot, acc) in group order, and the row's sum times the
// channel's scale. The activations' device layout (w8_act_bytes): every row's k int8 values (rows
// k bytes apart, as q8_act.hpp's), then from w8_act_scales_offset each row's k / group floats.
// Decode (up to 8 rows) takes dp4a, longer batches the int8 tensor cores (mma_frag.hpp).
// Everything here is FW_HD: tests/kernels/cuda_math_test.cpp checks it on the host against the
// references, bit for bit. Thread-safety: pure functions.
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/cuda/q8_act.hpp"

namespace fw::cuda {

/// Formats whose products take int8 activations with group scales (flywheel's W8A8).
FW_HD bool w8_act_format(wfmt f) { return f == wfmt::w8; }

/// Activation channels per scale: 64 where k allows, else 32 (fw::act_i8_group).
FW_HD int64_t w8_group(int64_t k) { return k % 64 == 0 ? 64 : 32; }

/// Where the group scales of m rows of k activations start (16-byte aligned), and the bytes of
/// device scratch the whole takes.
FW_HD int64_t w8_act_scales_offset(int64_t m, int64_t k) { return (m * k + 15) / 16 * 16; }
FW_HD int64_t w8_act_bytes(int64_t m, int64_t k) { return w8_act_scales_offset(m, k) + 4 * m * (k / w8_group(k)); }

/// A group's scale: the static one when > 0, else its largest magnitude / 127 (not rounded to
/// fp16: ref::quantize_act_i8).
FW_HD float w8_act_scale(float amax, float fixed) { return fixed > 0.f ? fixed : amax / 127.f; }

/// Row header of a fw_w8a8 row: its float scale, then the int8 values from byte 32.
inline constexpr int64_t w8_row_header = 32;
FW_HD float w8_row_scale(const uint8_t* row) { return load_f32(row); }

/// The reference's step for one group: acc + scale * (float) isum, rounded once.
FW_HD float w8_group_term(float scale, int32_t isum, float acc) {
#if defined(__CUDA_ARCH__)
  return __fmaf_rn(scale, static_cast<float>(isum), acc);
#else
  return std::fma(scale, static_cast<float>(isum), acc);
#endif
}

/// The integer dot of `words` 32-bit words of int8 weights and activations (dp4a).
FW_HD int32_t i8_words_dot(const int32_t* w, const int32_t* x, int words, int32_t acc) {
  for (int i = 0; i < words; ++i) acc = dp4a(w[i], x[i], acc);
  return acc;
}

}  // namespace fw::cuda
