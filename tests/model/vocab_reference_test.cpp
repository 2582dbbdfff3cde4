// flywheel's tokenizer on the vocab-only GGUFs of real model families that ship with llama.cpp's
// source (models/vocab/, put there by scripts/setup.sh from the pinned llama-cpp-python sdist),
// against two references made by llama.cpp itself:
//   - its own test vectors next to each file (ggml-vocab-NAME.gguf.inp/.out: texts separated by
//     "\n__ggml_vocab_test__\n", ids tokenized with add_special = parse_special = false);
//   - tests/data/vocab_reference.json, made by tools/reference/make_vocab_reference.py with the
//     llama.cpp Python binding (vocab_only): per vocabulary, cases {"text" | "text_latin1",
//     "add_special", "parse_special", "ids"} and detokenize cases {"ids", "remove_special",
//     "unparse_special", "bytes_latin1"}; "text_latin1"/"bytes_latin1" carry raw bytes (each code
//     point U+0000..U+00FF is one byte), which is how invalid UTF-8 travels through JSON.
// A missing vocab file is a failure, not a skip: these files are the proof for those families.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "runtime/gguf/gguf_file.hpp"
#include "runtime/text/chat_encoding.hpp"
#include "runtime/text/chat_template.hpp"
#include "runtime/text/tokenizer.hpp"
#include "runtime/text/unicode_text.hpp"

namespace fw {
namespace {

const std::vector<std::string> vocab_names = {"qwen2", "deepseek-llm", "deepseek-coder", "falcon",
                                              "llama-spm", "phi-3"};

std::string vocab_path(const std::string& name) {
  return std::string(FW_SOURCE_DIR) + "/models/vocab/ggml-vocab-" + name + ".gguf";
}

// Loaded once per vocabulary; nullptr (with a recorded failure) when missing or unreadable.
const tokenizer* vocab(const std::string& name) {
  static std::map<std::string, std::unique_ptr<tokenizer>> cache;
  if (auto it = cache.find(name); it != cache.end()) return it->second.get();
  std::unique_ptr<tokenizer>& slot = cache[name];
  const std::string path = vocab_path(name);
  if (!std::filesystem::exists(path)) {
    ADD_FAILURE() << path << " is missing: run scripts/setup.sh (it extracts the vocab-only GGUFs "
                  << "from the llama-cpp-python sdist into models/vocab/)";
    return nullptr;
  }
  auto file = gguf_file::open(path);
  if (!file) {
    ADD_FAILURE() << file.err().what();
    return nullptr;
  }
  auto t = tokenizer::from_gguf(**file);
  if (!t) {
    ADD_FAILURE() << name << ": " << t.err().what();
    return nullptr;
  }
  slot = std::make_unique<tokenizer>(std::move(*t));
  return slot.get();
}

std::string latin1_to_bytes(const std::string& utf8) {
  std::string out;
  for (uint32_t cpt : utf8_to_codepoints(utf8)) out.push_back(static_cast<char>(cpt & 0xFF));
  return out;
}

std::string printable(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    if (c >= 0x20 && c < 0x7F) {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", c);
      out += buf;
    }
  }
  return out;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class vocab_reference : public ::testing::TestWithParam<std::string> {};

TEST_P(vocab_reference, loads_as_the_expected_kind) {
  const tokenizer* tok = vocab(GetParam());
  ASSERT_NE(tok, nullptr);
  const bool spm = GetParam() == "llama-spm" || GetParam() == "phi-3";
  EXPECT_EQ(tok->kind(), spm ? tokenizer_kind::spm : tokenizer_kind::bpe);
  EXPECT_EQ(tok->kind_name(), spm ? "spm (sentencepiece)" : "bpe (gpt2 byte-level)");
  if (!spm) {
    EXPECT_EQ(tok->pre_name(), GetParam());
  }
}

TEST_P(vocab_reference, matches_llama_cpp_test_vectors) {
  const tokenizer* tok = vocab(GetParam());
  ASSERT_NE(tok, nullptr);
  const std::string inp = read_file(vocab_path(GetParam()) + ".inp");
  const std::string out = read_file(vocab_path(GetParam()) + ".out");
  ASSERT_FALSE(inp.empty()) << "missing " << vocab_path(GetParam()) << ".inp: run scripts/setup.sh";
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> texts;
  for (size_t pos = 0;;) {
    const size_t next = inp.find(sep, pos);
    if (next == std::string::npos) break;  // the file ends with a separator
    texts.push_back(inp.substr(pos, next - pos));
    pos = next + sep.size();
  }
  std::vector<std::vector<int32_t>> expected;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    std::vector<int32_t> ids;
    std::istringstream in(line);
    for (int32_t id; in >> id;) ids.push_back(id);
    expected.push_back(std::move(ids));
  }
  ASSERT_EQ(texts.size(), expected.size());
  ASSERT_GE(texts.size(), 30u);
  for (size_t i = 0; i < texts.size(); ++i)
    EXPECT_EQ(tok->encode(texts[i], false, false), expected[i]) << GetParam() << " case " << i << ": '"
                                                                 << printable(texts[i]) << "'";
}

TEST_P(vocab_reference, matches_llama_cpp_reference_data) {
  const tokenizer* tok = vocab(GetParam());
  ASSERT_NE(tok, nullptr);
  std::ifstream in(std::string(FW_SOURCE_DIR) + "/tests/data/vocab_reference.json");
  ASSERT_TRUE(in) << "tests/data/vocab_reference.json is missing (tools/reference/make_vocab_reference.py)";
  const nlohmann::json ref = nlohmann::json::parse(in);
  ASSERT_TRUE(ref.at("vocabs").contains(GetParam())) << "no reference cases for " << GetParam();
  const nlohmann::json& v = ref["vocabs"][GetParam()];
  const auto& cases = v.at("encode");
  ASSERT_GE(cases.size(), 100u);
  size_t mismatches = 0;
  for (const auto& c : cases) {
    const std::string text = c.contains("text_latin1") ? latin1_to_bytes(c["text_latin1"].get<std::string>())
                                                        : c["text"].get<std::string>();
    const bool add_special = c.at("add_special").get<bool>();
    const bool parse_special = c.at("parse_special").get<bool>();
    const auto want = c.at("ids").get<std::vector<int32_t>>();
    const auto got = tok->encode(text, add_special, parse_special);
    if (got != want && ++mismatches <= 10) {
      ADD_FAILURE() << GetParam() << ": '" << printable(text) << "' add_special=" << add_special
                    << " parse_special=" << parse_special << "\n  want " << testing::PrintToString(want)
                    << "\n  got  " << testing::PrintToString(got);
    }
  }
  EXPECT_EQ(mismatches, 0u) << "of " << cases.size() << " cases";
  RecordProperty("encode_cases", std::to_string(cases.size()));

  const auto& dcases = v.at("detokenize");
  ASSERT_FALSE(dcases.empty());
  for (const auto& c : dcases) {
    const auto ids = c.at("ids").get<std::vector<int32_t>>();
    const std::string want = latin1_to_bytes(c.at("bytes_latin1").get<std::string>());
    const std::string got = tok->detokenize(ids, c.at("remove_special").get<bool>(), c.at("unparse_special").get<bool>());
    EXPECT_EQ(printable(got), printable(want)) << GetParam() << " ids " << testing::PrintToString(ids);
  }
  for (const auto& c : v.at("pieces")) {
    const int32_t id = c.at("id").get<int32_t>();
    EXPECT_EQ(printable(tok->token_to_piece(id, c.at("special").get<bool>())),
              printable(latin1_to_bytes(c.at("bytes_latin1").get<std::string>())))
        << GetParam() << " token " << id;
  }
}

// The real chat templates over their vocabularies: encode_chat (markers as tokens, message text
// never parsed for special tokens) gives the ids llama.cpp gives the whole rendered prompt.
TEST(vocab_chat, encode_chat_matches_llama_cpp_on_rendered_prompts) {
  std::ifstream in(std::string(FW_SOURCE_DIR) + "/tests/data/vocab_reference_chat.json");
  ASSERT_TRUE(in) << "tests/data/vocab_reference_chat.json is missing (tools/reference/make_vocab_reference.py)";
  const nlohmann::json ref = nlohmann::json::parse(in);
  size_t checked = 0;
  for (const auto& t : ref.at("templates")) {
    const tokenizer* tok = vocab(t.at("vocab").get<std::string>());
    ASSERT_NE(tok, nullptr);
    auto tmpl = chat_template::from_source(t.at("source").get<std::string>(), t.at("bos").get<std::string>(),
                                           t.at("eos").get<std::string>());
    ASSERT_TRUE(tmpl.has_value()) << tmpl.err().what();
    for (const auto& r : t.at("renders")) {
      std::vector<chat_message> msgs;
      for (const auto& m : r.at("messages")) msgs.push_back({m.at("role").get<std::string>(), m.at("content").get<std::string>()});
      EXPECT_EQ(encode_chat(*tok, *tmpl, msgs, r.at("add_generation_prompt").get<bool>()),
                r.at("ids").get<std::vector<int32_t>>())
          << t.at("name").get<std::string>() << ": " << printable(r.at("text").get<std::string>());
      ++checked;
    }
  }
  EXPECT_GE(checked, 50u);
}

INSTANTIATE_TEST_SUITE_P(real_vocabs, vocab_reference, ::testing::ValuesIn(vocab_names),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n) {
                             if (c == '-') c = '_';
                           }
                           return n;
                         });

}  // namespace
}  // namespace fw
