// libFuzzer target: the tokenizer (the bundled model's byte-level BPE with its pre-tokenizer) and
// the chat template on arbitrary bytes. The input is split at 0 bytes into messages (roles
// cycling system / user / assistant) and rendered with the model's template: the rendered parts
// must concatenate to apply()'s text (chat_template.hpp's promise); the text is encoded with and
// without special-token parsing and decoded back, and the input read as token ids is decoded
// (out-of-range ids are skipped, never read). Vocabulary: FW_FUZZ_MODEL, else the bundled model.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/gguf/gguf_file.hpp"
#include "runtime/text/chat_template.hpp"
#include "runtime/text/tokenizer.hpp"

namespace {

struct vocab {
  fw::tokenizer tok;
  fw::chat_template tmpl;
};

const vocab& load() {
  static const vocab v = [] {
    const char* env = std::getenv("FW_FUZZ_MODEL");
    const std::string path = env ? env : FW_SOURCE_DIR "/models/SmolLM2-135M-Instruct.Q4_1.gguf";
    auto f = fw::gguf_file::open(path);
    if (!f) {
      std::fprintf(stderr, "fuzz_tokenizer: cannot open %s (scripts/setup.sh fetches it; FW_FUZZ_MODEL names another)\n",
                   path.c_str());
      std::abort();
    }
    auto t = fw::tokenizer::from_gguf(**f);
    auto c = fw::chat_template::from_gguf(**f);
    if (!t || !c) std::abort();
    return vocab{std::move(*t), std::move(*c)};
  }();
  return v;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const vocab& v = load();
  const std::string text(reinterpret_cast<const char*>(data), size);
  for (bool parse_special : {false, true}) {
    const auto ids = v.tok.encode(text, /*add_special=*/parse_special, parse_special);
    (void)v.tok.decode(ids);
  }
  std::vector<fw::chat_message> messages;
  static const char* roles[] = {"system", "user", "assistant"};
  size_t start = 0;
  for (size_t i = 0; i <= size; ++i) {
    if (i == size || data[i] == 0) {
      messages.push_back({roles[messages.size() % 3], text.substr(start, i - start)});
      start = i + 1;
    }
  }
  const auto parts = v.tmpl.render(messages, true);
  std::string joined;
  for (const auto& p : parts) joined += p.text;
  if (joined != v.tmpl.apply(messages, true)) __builtin_trap();
  std::vector<int32_t> raw(size / 4);
  if (!raw.empty()) std::memcpy(raw.data(), data, raw.size() * 4);
  (void)v.tok.decode(raw);
  return 0;
}
