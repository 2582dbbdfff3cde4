// Tensor element types as numbered by GGUF/ggml, with their block layout traits.
// A quantized row of n elements is n / block_size blocks of type_size bytes each.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace fw {

enum class ggml_type : uint32_t {
  f32 = 0,
  f16 = 1,
  q4_0 = 2,
  q4_1 = 3,
  q8_0 = 8,
  bf16 = 30,
  // flywheel's own formats (kernels/format/fw_formats.hpp), outside ggml's numbering
  fw_w8a8 = 0x46570008,
  fw_w4a16_g32 = 0x46570420,
  fw_w4a16_g64 = 0x46570440,
  fw_w4a16_g128 = 0x46570480,
};

/// One format's traits entry: block layout and the scalar reference conversions
/// (quant_ref.cpp), the ground truth of every optimized kernel of the format.
struct ggml_type_traits {
  ggml_type type;
  std::string_view name;
  uint32_t block_size;  ///< elements per block
  uint32_t type_size;   ///< bytes per block
  /// n elements (a multiple of block_size) of this type -> n floats.
  void (*to_float)(const void* src, float* dst, int64_t n) = nullptr;
  /// n floats -> n elements of this type (row_bytes(traits, n) bytes).
  void (*from_float)(const float* src, void* dst, int64_t n) = nullptr;
  /// Bytes before each row's blocks (a per-row scale); to_float / from_float then convert exactly
  /// one row. 0 for every ggml format.
  uint32_t row_header = 0;
  /// The format has calibration metadata and is made by `flywheel quantize` (not a ggml type).
  bool flywheel = false;
};

/// Every format this build computes with, in id order.
std::span<const ggml_type_traits> known_types();
/// The format called name ("q4_0"), if this build knows it.
std::optional<ggml_type> type_by_name(std::string_view name);

/// Traits of a type id read from a file; nullopt when this build does not know it.
std::optional<ggml_type_traits> type_traits(uint32_t raw_type);
ggml_type_traits type_traits(ggml_type type);

/// Name of any raw ggml type id, including ones this build cannot compute with ("q4_k", ...).
std::string_view ggml_type_name(uint32_t raw_type);

/// Bytes of a row of n elements (n must be a multiple of the block size).
inline size_t row_bytes(ggml_type_traits t, uint64_t n) { return t.row_header + (n / t.block_size) * t.type_size; }
/// True for formats whose rows are independent units (a row header): convert row by row.
inline bool has_row_header(ggml_type_traits t) { return t.row_header != 0; }

// -- GGUF block layouts (little endian, packed) --

constexpr int qk4_0 = 32;
struct block_q4_0 {
  uint16_t d;              ///< fp16 scale
  uint8_t qs[qk4_0 / 2];   ///< nibbles: low = element j, high = element j + 16
};
static_assert(sizeof(block_q4_0) == 18);

constexpr int qk4_1 = 32;
struct block_q4_1 {
  uint16_t d;              ///< fp16 scale
  uint16_t m;              ///< fp16 minimum
  uint8_t qs[qk4_1 / 2];
};
static_assert(sizeof(block_q4_1) == 20);

constexpr int qk8_0 = 32;
struct block_q8_0 {
  uint16_t d;              ///< fp16 scale
  int8_t qs[qk8_0];
};
static_assert(sizeof(block_q8_0) == 34);

}  // namespace fw
