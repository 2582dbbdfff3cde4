// lever_summary: which of the three levers a built runtime serves with, as one line for the
// console's and the server's banners ("levers: quantized weights (q4_1); speculation: ngram,
// k auto; prefill/decode: logical, shortest prompt first"), so a user sees what the config turned
// on without reading it. `flywheel bench ablation` measures what each buys.
// Thread-safety: a pure function of the parts.
#pragma once

#include <string>

#include "runtime/setup/runtime_parts.hpp"

namespace fw {

std::string lever_summary(const runtime_parts& parts);

}  // namespace fw
