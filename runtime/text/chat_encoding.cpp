#include "runtime/text/chat_encoding.hpp"

namespace fw {

std::vector<int32_t> encode_chat(const tokenizer& vocab, const chat_template& tmpl,
                                 const std::vector<chat_message>& messages, bool add_generation_prompt) {
  std::vector<int32_t> out;
  if (vocab.add_bos() && vocab.bos() >= 0) out.push_back(vocab.bos());
  for (const chat_part& part : tmpl.render(messages, add_generation_prompt)) {
    std::vector<int32_t> ids;
    if (part.control) {
      // A marker the vocabulary lacks is tokenized as text (the model then sees what it reads).
      if (auto id = vocab.find_token(part.text)) ids.push_back(*id);
      else ids = vocab.encode(part.text, false, true);
    } else {
      ids = vocab.encode(part.text, false, false);
    }
    out.insert(out.end(), ids.begin(), ids.end());
  }
  return out;
}

}  // namespace fw
