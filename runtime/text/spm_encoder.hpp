// spm_encoder: the SentencePiece-style merge llama.cpp runs for "llama" vocabularies
// (llm_tokenizer_spm), for one text fragment whose spaces are already written as U+2581 "▁".
// The fragment starts as one symbol per UTF-8 character (a lead byte claims as many following
// bytes as it announces, valid or not, as llama.cpp's unicode_len_utf8 does); adjacent symbols
// whose concatenation is a vocabulary token are merged, highest token score first (leftmost on
// ties), until no pair forms a token. Each final symbol is its token, or, when it is not in the
// vocabulary, one byte-fallback token "<0xXX>" per byte (else the single-byte token, else unk:
// llama.cpp aborts there, flywheel keeps going).
// Ownership: borrows the tokenizer's index, scores and byte table for the call only.
// Thread-safety: a pure function; all state lives on the caller's stack.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "runtime/text/token_index.hpp"

namespace fw {

struct spm_vocab_view {
  const token_index& ids;
  std::span<const float> scores;               ///< id -> score
  const std::array<int32_t, 256>& byte_tokens;  ///< byte -> fallback id, -1 if none
  int32_t unk = -1;
};

/// Appends the ids of `text` (already ▁-escaped, no special tokens) to `out`.
void spm_encode(std::string_view text, const spm_vocab_view& vocab, std::vector<int32_t>& out);

}  // namespace fw
