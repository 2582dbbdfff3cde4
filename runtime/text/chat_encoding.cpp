#include "runtime/text/chat_encoding.hpp"

namespace fw {

std::vector<int32_t> encode_chat(const tokenizer& vocab, const chat_template& tmpl,
                                 const std::vector<chat_message>& messages, bool add_generation_prompt) {
  std::vector<int32_t> out;
  const bool add_bos = vocab.add_bos() && vocab.bos() >= 0;
  if (add_bos) out.push_back(vocab.bos());
  std::vector<chat_part> parts = tmpl.render(messages, add_generation_prompt);
  // The template's own leading BOS is dropped when the vocabulary adds one (llama.cpp's chat
  // code strips it from the rendered text for the same reason: no double BOS).
  if (add_bos && !parts.empty() && parts.front().control && parts.front().text == vocab.token_text(vocab.bos()))
    parts.erase(parts.begin());

  // Plain text runs up to the next marker that is a vocabulary token; markers that are not tokens
  // (Llama 2's "[INST]") are text inside the run. encode_pieces tokenizes the runs as fragments of
  // the whole prompt (SentencePiece's leading space, Phi-3's rstrip), without special parsing.
  std::vector<prompt_piece> pieces;
  std::vector<std::string> runs;  // stable storage for the text pieces' views
  runs.reserve(parts.size());
  for (const chat_part& part : parts) {
    if (part.control) {
      if (auto id = vocab.find_token(part.text)) {
        pieces.push_back({*id, {}});
        continue;
      }
    }
    if (pieces.empty() || pieces.back().token >= 0) {
      runs.emplace_back();
      pieces.push_back({-1, {}});
    }
    runs.back() += part.text;
  }
  for (size_t i = 0, r = 0; i < pieces.size(); ++i) {
    if (pieces[i].token < 0) pieces[i].text = runs[r++];
  }
  std::vector<int32_t> ids = vocab.encode_pieces(pieces, false);
  out.insert(out.end(), ids.begin(), ids.end());
  return out;
}

}  // namespace fw
