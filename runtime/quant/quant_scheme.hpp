// quant_scheme: what `flywheel quantize --scheme` writes. The unquantized schemes (f32, f16,
// bf16) are the reference every quality figure is measured against; q8_0 / q4_0 / q4_1 are
// ggml's formats (round-to-nearest, for comparison); w8a8, w4a16 and mixed are flywheel's
// calibrated schemes. Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string_view>

#include "kernels/format/ggml_type.hpp"

namespace fw {

enum class quant_scheme { f32, f16, bf16, q8_0, q4_0, q4_1, w8a8, w4a16, mixed };

std::optional<quant_scheme> scheme_by_name(std::string_view name);
std::string_view scheme_name(quant_scheme s);
/// "f32|f16|...": every scheme name, for help texts and errors.
std::string_view scheme_names();
/// w8a8, w4a16 and mixed: flywheel's formats, tuned on calibration data.
bool is_flywheel_scheme(quant_scheme s);
/// The matrix type of a single-format scheme (mixed: none); w4a16 by group size (32, 64, 128).
std::optional<ggml_type> matrix_type(quant_scheme s, int group = 128);
/// The fw_w4a16 type of a group size; nullopt for a size without a format.
std::optional<ggml_type> w4a16_type(int group);
/// general.file_type as llama.cpp numbers it, for the ggml schemes; nullopt otherwise.
std::optional<uint32_t> llama_file_type(quant_scheme s);

}  // namespace fw
