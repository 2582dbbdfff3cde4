#include "runtime/model/user_prompt.hpp"

#include "runtime/text/chat_encoding.hpp"

namespace fw {

std::vector<int32_t> user_prompt(const model& m, const std::string& text) {
  if (m.chat()) return encode_chat(m.vocab(), *m.chat(), {{"user", text}}, true);
  return m.vocab().encode(text, true, false);
}

}  // namespace fw
