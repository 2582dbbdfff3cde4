// sampling_section: [sampling], defaults for requests that do not say otherwise. Defaults equal
// sampling_params' (runtime/sample: sampling_params::from_section turns it into one).
// Thread-safety: plain value.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fw {

struct sampling_section {
  float temperature = 0.8f;       ///< 0: greedy
  int32_t top_k = 40;             ///< 0: off
  float top_p = 0.95f;            ///< 1: off
  float min_p = 0.05f;            ///< 0: off
  float repeat_penalty = 1.0f;    ///< 1: off
  int32_t repeat_last_n = 64;     ///< 0: none, -1: whole history
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
  uint64_t seed = 0;              ///< 0: random
  int32_t max_tokens = 128;       ///< -1: until end of sequence / context
  std::vector<std::string> stop;  ///< stop strings
  bool operator==(const sampling_section&) const = default;
};

}  // namespace fw
