// model_section: [model], the target model. Read by runtime/setup (model load, context window).
// Thread-safety: plain value.
#pragma once

#include <cstdint>
#include <string>

namespace fw {

struct model_section {
  std::string path = "models/SmolLM2-135M-Instruct.Q4_1.gguf";  ///< GGUF file
  uint32_t ctx_size = 4096;  ///< tokens per sequence; 0: the model's training context, capped at 4096
  bool operator==(const model_section&) const = default;
};

}  // namespace fw
