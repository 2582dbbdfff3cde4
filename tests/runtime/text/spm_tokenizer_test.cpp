// SentencePiece-style ("llama") tokenizer on a tiny hand-built vocabulary: score-ordered merges,
// byte fallback, the leading-space rule and decoding. The real vocabularies are checked against
// llama.cpp in tests/model/vocab_reference_test.cpp.
#include <gtest/gtest.h>

#include "runtime/gguf/gguf_file.hpp"
#include "runtime/gguf/gguf_writer.hpp"
#include "runtime/text/tokenizer.hpp"

namespace fw {
namespace {

using ids = std::vector<int32_t>;

// 0 <unk>, 1 <s>, 2 </s>, 3 <|user|> (control), 4..259 the byte tokens <0x00>..<0xFF>, then the
// normal pieces below with their scores.
struct piece {
  const char* text;
  float score;
};
const std::vector<piece> pieces = {
    {"\xE2\x96\x81", -1.0f},  // "▁"
    {"a", -2.0f},  {"b", -2.0f},  {"c", -2.0f},  {"x", -2.0f}, {"y", -2.0f},
    {"ab", -5.0f}, {"bc", -4.0f}, {"xy", -3.0f},
    {"\xE2\x96\x81" "a", -3.5f},  // "▁a"
    {"\xE2\x96\x81" "x", -6.0f},  // "▁x"
};

tokenizer_vocab spm_vocab() {
  tokenizer_vocab v;
  v.kind = tokenizer_kind::spm;
  v.tokens = {"<unk>", "<s>", "</s>", "<|user|>"};
  v.types = {2, 3, 3, 3};
  v.scores = {0, 0, 0, 0};
  for (int b = 0; b < 256; ++b) {
    char hex[8];
    std::snprintf(hex, sizeof hex, "<0x%02X>", b);
    v.tokens.push_back(hex);
    v.types.push_back(6);
    v.scores.push_back(0);
  }
  for (const piece& p : pieces) {
    v.tokens.push_back(p.text);
    v.types.push_back(1);
    v.scores.push_back(p.score);
  }
  v.bos = 1;
  v.eos = 2;
  v.unk = 0;
  return v;
}

tokenizer make(tokenizer_vocab v = spm_vocab()) {
  auto t = tokenizer::from_vocab(std::move(v));
  EXPECT_TRUE(t.has_value()) << (t ? "" : t.err().what());
  return std::move(t).value();
}

int32_t id(const tokenizer& t, std::string_view text) { return t.find_token(text).value_or(-1); }
int32_t byte(uint8_t b) { return 4 + b; }

TEST(spm_tokenizer, defaults_follow_llama_cpp) {
  const tokenizer t = make();
  EXPECT_EQ(t.kind(), tokenizer_kind::spm);
  EXPECT_EQ(t.kind_name(), "spm (sentencepiece)");
  EXPECT_EQ(t.pre_name(), "");
  EXPECT_TRUE(t.add_bos());
  EXPECT_FALSE(t.add_eos());
  EXPECT_TRUE(t.add_space_prefix());
}

TEST(spm_tokenizer, merges_highest_score_first_not_leftmost) {
  tokenizer_vocab v = spm_vocab();
  v.add_space_prefix = false;
  const tokenizer t = make(v);
  // "bc" (-4) beats "ab" (-5) although "ab" is further left.
  EXPECT_EQ(t.encode("abc", false, false), (ids{id(t, "a"), id(t, "bc")}));
  // "xy" (-3) merges before "▁x" (-6) could.
  EXPECT_EQ(t.encode(" xy", false, false), (ids{id(t, "\xE2\x96\x81"), id(t, "xy")}));
}

TEST(spm_tokenizer, equal_scores_merge_leftmost_first) {
  tokenizer_vocab v = spm_vocab();
  v.add_space_prefix = false;
  for (size_t i = 0; i < v.tokens.size(); ++i) {
    if (v.tokens[i] == "ab" || v.tokens[i] == "bc") v.scores[i] = -4.0f;
  }
  const tokenizer t = make(v);
  EXPECT_EQ(t.encode("abc", false, false), (ids{id(t, "ab"), id(t, "c")}));
}

TEST(spm_tokenizer, space_prefix_at_start_and_after_special_tokens) {
  const tokenizer t = make();
  const int32_t sp_a = id(t, "\xE2\x96\x81" "a");
  EXPECT_EQ(t.encode("a", false, false), (ids{sp_a}));
  EXPECT_EQ(t.encode("a", true, false), (ids{1, sp_a}));
  // After a parsed special token the next text fragment gets the prefix again.
  EXPECT_EQ(t.encode("a<|user|>a", false, true), (ids{sp_a, 3, sp_a}));
  // Unparsed, "<|user|>" is plain text that falls back to bytes.
  const ids plain = t.encode("<|user|>", false, false);
  ASSERT_EQ(plain.size(), 9u);
  EXPECT_EQ(plain[0], id(t, "\xE2\x96\x81"));
  EXPECT_EQ(plain[1], byte('<'));

  tokenizer_vocab v = spm_vocab();
  v.add_space_prefix = false;
  const tokenizer np = make(v);
  EXPECT_EQ(np.encode("a", false, false), (ids{id(np, "a")}));
  EXPECT_EQ(np.encode("a<|user|>a", false, true), (ids{id(np, "a"), 3, id(np, "a")}));
}

TEST(spm_tokenizer, unknown_characters_fall_back_to_bytes) {
  tokenizer_vocab v = spm_vocab();
  v.add_space_prefix = false;
  const tokenizer t = make(v);
  EXPECT_EQ(t.encode("\xC3\xA9", false, false), (ids{byte(0xC3), byte(0xA9)}));  // "é"
  EXPECT_EQ(t.encode("a\xF0\x9F\x98\x80", false, false),
            (ids{id(t, "a"), byte(0xF0), byte(0x9F), byte(0x98), byte(0x80)}));
  // A stray lead byte claims the bytes it announces, as llama.cpp's splitter does: "\xE4ab" is
  // one symbol, so "a" and "b" come out as bytes too.
  EXPECT_EQ(t.encode("\xE4" "abc", false, false), (ids{byte(0xE4), byte('a'), byte('b'), id(t, "c")}));
}

TEST(spm_tokenizer, decodes_spaces_and_bytes) {
  const tokenizer t = make();
  const ids e = t.encode("a xy \xC3\xA9", true, false);
  EXPECT_EQ(t.decode(e), "<s> a xy \xC3\xA9");
  EXPECT_EQ(t.decode(e, false), " a xy \xC3\xA9");
  EXPECT_EQ(t.token_to_piece(id(t, "\xE2\x96\x81" "a")), " a");
  EXPECT_EQ(t.token_to_piece(byte(0x41)), "A");
  EXPECT_EQ(t.token_to_piece(3, false), "");
  // llama_detokenize drops the space prefix again, unless it removes a leading BOS (then the
  // space stays, as in llama.cpp).
  EXPECT_EQ(t.detokenize(e, true, false), " a xy \xC3\xA9");
  EXPECT_EQ(t.detokenize(e, false, true), "<s> a xy \xC3\xA9");
  EXPECT_EQ(t.detokenize(t.encode("a", false, false), false, false), "a");
}

TEST(spm_tokenizer, phi3_names_make_special_tokens_swallow_following_spaces) {
  tokenizer_vocab v = spm_vocab();
  v.name = "Phi3";
  const tokenizer t = make(v);
  const int32_t sp_a = id(t, "\xE2\x96\x81" "a");
  EXPECT_EQ(t.encode("<|user|>  \n a", false, true), (ids{3, sp_a}));
  const tokenizer plain = make();
  EXPECT_NE(plain.encode("<|user|>  \n a", false, true), (ids{3, sp_a}));
}

TEST(spm_tokenizer, from_gguf_reads_scores_and_defaults) {
  const tokenizer_vocab v = spm_vocab();
  gguf_writer w;
  w.add_string("tokenizer.ggml.model", "llama");
  w.add_string_array("tokenizer.ggml.tokens", v.tokens);
  w.add_int32_array("tokenizer.ggml.token_type", v.types);
  w.add_float32_array("tokenizer.ggml.scores", v.scores);
  const auto bytes = w.bytes();
  auto file = gguf_file::from_bytes(bytes);
  ASSERT_TRUE(file.has_value()) << file.err().what();
  auto t = tokenizer::from_gguf(**file);
  ASSERT_TRUE(t.has_value()) << t.err().what();
  EXPECT_EQ(t->bos(), 1);  // llama.cpp's SPM defaults when the file names none
  EXPECT_EQ(t->eos(), 2);
  EXPECT_EQ(t->unk(), 0);
  EXPECT_TRUE(t->is_eog(2));
  EXPECT_EQ(t->encode("abc", true, false), make().encode("abc", true, false));

  gguf_writer short_scores;
  short_scores.add_string("tokenizer.ggml.model", "llama");
  short_scores.add_string_array("tokenizer.ggml.tokens", v.tokens);
  short_scores.add_float32_array("tokenizer.ggml.scores", {0.0f});
  auto bad = gguf_file::from_bytes(short_scores.bytes());
  ASSERT_TRUE(bad.has_value());
  auto bad_tok = tokenizer::from_gguf(**bad);
  ASSERT_FALSE(bad_tok.has_value());
  EXPECT_EQ(bad_tok.err().code, errc::malformed_file);
}

}  // namespace
}  // namespace fw
