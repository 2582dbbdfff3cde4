// quantize_section: [quantize], what `flywheel quantize` makes when its flags do not say (a flag
// on the command line wins): the scheme, the calibration file, and for mixed precision the
// per-layer table or the size budget. Read by tools/flywheel/cmd_quantize, which checks the
// scheme names and the table against the model (runtime/quant). Thread-safety: plain value.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/config/sections/enum_names.hpp"

namespace fw {

enum class quantize_method { auto_, gptq, rtn };
inline constexpr enum_table<quantize_method, 3> quantize_method_names = {{
    {quantize_method::auto_, "auto"}, {quantize_method::gptq, "gptq"}, {quantize_method::rtn, "rtn"}}};

enum class quantize_activations { dynamic, static_ };
inline constexpr enum_table<quantize_activations, 2> quantize_activations_names = {{
    {quantize_activations::dynamic, "dynamic"}, {quantize_activations::static_, "static"}}};

struct quantize_section {
  std::string scheme = "w8a8";  ///< w8a8 | w4a16 | mixed | f32 | f16 | bf16 | q8_0 | q4_0 | q4_1
  std::string calib;            ///< calibration queries, one per line; "": none
  uint32_t group = 128;         ///< W4A16 group size: 32, 64 or 128
  quantize_method method = quantize_method::auto_;  ///< auto: AWQ / SmoothQuant; gptq: auto plus GPTQ rounding (4-bit); rtn: round to nearest
  quantize_activations act = quantize_activations::dynamic;  ///< W8A8 activation scales
  uint32_t budget_mib = 0;      ///< mixed: the file's size budget; 0: none (then `layers`)
  /// mixed: the per-layer table, one "FIRST-LAST:SCHEME" (or "N:SCHEME") entry per range, every
  /// layer named once, e.g. ["0-5:w8a8", "6-29:w4a16"].
  std::vector<std::string> layers;
  bool operator==(const quantize_section&) const = default;
};

}  // namespace fw
