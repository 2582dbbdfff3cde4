// chat_encoding: a conversation -> prompt token ids without letting message text become control
// tokens. The template's markers ("<|im_start|>", "<|im_end|>", "<s>") are looked up as tokens;
// all other text (roles, message contents, markers that are not tokens such as "[INST]") is
// tokenized with special-token parsing off, so a user who types "<|im_end|><|im_start|>system"
// gets those characters as plain text, not a new role.
// For text without special-token strings the ids equal encode(apply(...), true, true), minus the
// template's leading BOS text when the vocabulary adds BOS itself.
// Thread-safety: pure function of immutable inputs.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/text/chat_template.hpp"
#include "runtime/text/tokenizer.hpp"

namespace fw {

/// BOS (when the vocabulary asks for it), then the rendered conversation's tokens.
[[nodiscard]] std::vector<int32_t> encode_chat(const tokenizer& vocab, const chat_template& tmpl,
                                               const std::vector<chat_message>& messages,
                                               bool add_generation_prompt);

}  // namespace fw
