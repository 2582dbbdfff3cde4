// run_llama_layers: the layer sequence of the Llama architecture (Llama 2/3, Mistral, SmolLM2)
// over a device's llama_ops: embedding, then per layer pre-norm attention and pre-norm SwiGLU
// feed-forward with residual additions, then the output norm and head. The one place that says
// what a Llama forward computes; backends say how. Thread-safety: as the ops.
#pragma once

#include <cstdint>

#include "runtime/model/arch/llama_ops.hpp"

namespace fw {

/// Runs the first n_layers layers (a layer-skip draft's early exit) or all of them (n_layers =
/// 0 or >= total), then the head.
void run_llama_layers(llama_ops& ops, uint32_t total_layers, uint32_t n_layers);

}  // namespace fw
