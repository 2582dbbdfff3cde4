// user_prompt: one user message -> the prompt a chat model expects. With a chat template the
// text is one "user" turn followed by the generation prompt (encode_chat: the text never becomes
// control tokens); without one it is the plain text after BOS. fit-draft, quantize's calibration,
// bench-spec and the quality report all turn their users' queries into prompts here.
// Thread-safety: pure function of the model, which is immutable.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/model/model.hpp"

namespace fw {

[[nodiscard]] std::vector<int32_t> user_prompt(const model& m, const std::string& text);

}  // namespace fw
