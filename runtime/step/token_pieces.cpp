#include "runtime/step/token_pieces.hpp"

#include <algorithm>

namespace fw {

token_pieces::token_pieces(const tokenizer& vocab, int32_t n_vocab)
    : pieces_(static_cast<size_t>(n_vocab)),
      eog_(static_cast<size_t>(n_vocab), 0),
      string_safe_(static_cast<size_t>(n_vocab), 0),
      bytes_(static_cast<size_t>(n_vocab)),
      by_first_(256) {
  for (int32_t t = 0; t < n_vocab; ++t) {
    const auto i = static_cast<size_t>(t);
    const bool known = t < vocab.n_vocab();
    eog_[i] = known && vocab.is_eog(t);
    if (known && !vocab.is_control(t)) pieces_[i] = vocab.token_to_piece(t);  // control tokens add no text
    const std::string& p = pieces_[i];
    if (eog_[i]) {
      endings_.push_back(t);
      continue;
    }
    if (p.empty()) {
      textless_.push_back(t);
      continue;
    }
    string_safe_[i] = std::none_of(p.begin(), p.end(), [](char c) {
      return c == '"' || c == '\\' || static_cast<unsigned char>(c) < 0x20;
    });
    bytes_[i].add_all(p);
    by_first_[static_cast<uint8_t>(p[0])].push_back(t);
  }
}

}  // namespace fw
