// fw_formats: flywheel's own weight formats, which GGUF has no type for (the quantization lever,
// `flywheel quantize`), and the activation rows their kernels consume. Type ids live in a range
// ggml does not use ("FW" in the top bytes); a reader that does not know them refuses the tensor
// (llama.cpp: "tensor ... has invalid ggml type"). Layouts (little endian, packed):
//
//  fw_w8a8: int8 weights, symmetric, one scale per output channel (row). A row of k elements is a
//    32-byte header (float scale d, then zeros) and k int8 q: w = d * q. Activations: int8, made
//    per token, with a scale per 64 channels (act_i8_group), dynamic (max |x| / 127 of the
//    group) or static (one per-tensor scale from calibration).
//  fw_w4a16_g{32,64,128}: 4-bit weights in groups of G with a scale and a zero-point per group:
//    a group is an fp16 scale d, an fp16 offset m (= -d * zero_point) and G/2 bytes of nibbles;
//    in each 32-element chunk of a group byte j holds element j (low nibble) and j + 16 (high):
//    w = d * q + m, q in 0..15. Activations stay at 16 bits: int16 with one scale per token (about
//    15 significant bits; this host has no BF16 dot product, and int16 keeps the integer units busy).
//
// The quantizers here are plain round-to-nearest with an optional clipping ratio; calibration
// (runtime/quant) chooses scales and clipping. Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>

namespace fw {

/// The flywheel range of tensor type ids ("FW" in the top 16 bits).
inline constexpr uint32_t fw_type_base = 0x46570000u;
inline bool is_fw_type_id(uint32_t raw) { return (raw & 0xffff0000u) == fw_type_base; }

/// fw_w8a8 row header: the per-channel scale, padded to 32 bytes so that every row's int8 values
/// start 32-byte aligned (k is a multiple of 32): unaligned rows cost decode ~15% in split loads.
struct w8_row_header {
  float d;
  uint8_t reserved[28];  ///< zero
};
static_assert(sizeof(w8_row_header) == 32);

/// One fw_w4a16 group header; the G/2 nibble bytes follow.
struct w4_group_header {
  uint16_t d;  ///< fp16 scale
  uint16_t m;  ///< fp16 offset (-d * zero_point)
};
static_assert(sizeof(w4_group_header) == 4);

inline constexpr size_t w4_group_bytes(int g) { return sizeof(w4_group_header) + static_cast<size_t>(g) / 2; }

namespace fw_format {
/// Row of k floats -> fw_w8a8 (32 + k bytes). clip in (0, 1]: the scale covers clip * max |x|.
void quantize_w8_row(const float* x, void* dst, int64_t k, float clip = 1.f);
void dequantize_w8_row(const void* src, float* y, int64_t k);
/// One group of g floats -> one fw_w4a16 group. clip in (0, 1] shrinks the range around its
/// midpoint before rounding (what a clipping search tunes).
void quantize_w4_group(const float* x, int g, void* dst, float clip = 1.f);
void dequantize_w4_group(const void* src, int g, float* y);
/// One group with a given scale d > 0 and offset m (stored as fp16; values rounded with the
/// stored ones): w = d * q + m.
void requantize_w4_group(const float* x, int g, float d, float m, void* dst);
/// Rows of the group sizes, for the traits table (n a multiple of G).
template <int G> void w4_to_float(const void* src, float* dst, int64_t n);
template <int G> void w4_from_float(const float* src, void* dst, int64_t n);
}  // namespace fw_format

// -- activation rows of the fw kernels (made on the fly from f32 rows) --

/// Header of an activation row (float d: the row's scale; int16 rows use it for every value);
/// the values start at byte 32.
inline constexpr size_t act_row_header = 32;
struct act_row_head {
  float d;
};
/// int8 rows carry one scale per group of this many channels (64 where k allows, else 32): a
/// token's few huge channels (the "massive activations" of attention-sink tokens) then cost
/// precision in their group only, not across the whole row (measured on SmolLM2-135M: one
/// scale per row loses ~2x more perplexity in the down projection).
inline constexpr int64_t act_i8_group(int64_t k) { return k % 64 == 0 ? 64 : 32; }
/// Bytes of one int8 activation row: header, k int8 values, then k / group float scales.
inline constexpr size_t act_i8_row_bytes(int64_t k) {
  return act_row_header + static_cast<size_t>(k) + 4 * static_cast<size_t>(k / act_i8_group(k));
}
/// Bytes of one int16 activation row: header, k int16 values, then k / 32 int32 chunk sums.
inline constexpr size_t act_i16_row_bytes(int64_t k) {
  return act_row_header + 2 * static_cast<size_t>(k) + 4 * static_cast<size_t>(k / 32);
}

}  // namespace fw

namespace fw {
/// GGUF metadata key of the flywheel quantization format version, and the version this build
/// reads and writes. A file with another version is refused by name (model loading).
inline constexpr const char* fw_quant_version_key = "flywheel.quant.version";
inline constexpr uint32_t fw_quant_version = 1;
}  // namespace fw
