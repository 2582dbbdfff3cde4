// Tokenizer, pre-tokenizer and UTF-8 helper tests on a tiny hand-built byte-level BPE vocabulary.
#include <gtest/gtest.h>

#include <chrono>
#include <random>

#include "runtime/gguf/gguf_file.hpp"
#include "runtime/gguf/gguf_writer.hpp"
#include "runtime/text/pre_tokenizer.hpp"
#include "runtime/text/tokenizer.hpp"
#include "runtime/text/unicode_text.hpp"

namespace fw {
namespace {

using words = std::vector<std::string>;

words split(pre_tokenizer_kind kind, std::string_view text) { return pre_tokenizer(kind).split_text(text); }

// Ids 0-2 control, 3 user-defined "<|im", then the 256 byte tokens (byte b -> id 4 + b), then one
// token per merge except "x y", whose result is deliberately missing from the vocabulary.
const std::vector<std::string> tiny_merges = {
    "Ġ w", "o r", "l l", "H e", "He ll", "Hell o", "Ġw or", "Ġwor l", "Ġworl d",
    "b c", "a b", "a a", "' t", "x y", "Ġ Ġ", "ä ¸", "ä¸ Ń"};

tokenizer_vocab tiny_vocab(std::string pre = "smollm") {
  tokenizer_vocab v;
  v.tokens = {"<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|im"};
  v.types = {3, 3, 3, 4};
  for (int b = 0; b < 256; ++b) {
    v.tokens.push_back(byte_to_unicode_text(static_cast<uint8_t>(b)));
    v.types.push_back(1);
  }
  for (const std::string& m : tiny_merges) {
    if (m == "x y") continue;
    const size_t sp = m.find(' ');
    v.tokens.push_back(m.substr(0, sp) + m.substr(sp + 1));
    v.types.push_back(1);
  }
  v.merges = tiny_merges;
  v.pre = std::move(pre);
  v.bos = 1;
  v.eos = 2;
  v.unk = 0;
  return v;
}

tokenizer make_tiny(std::string pre = "smollm") {
  auto t = tokenizer::from_vocab(tiny_vocab(std::move(pre)));
  EXPECT_TRUE(t.has_value()) << (t ? "" : t.err().what());
  return std::move(t).value();
}

int32_t byte_id(uint8_t b) { return 4 + b; }

int32_t id_of(const tokenizer& t, std::string_view text) {
  auto id = t.find_token(text);
  EXPECT_TRUE(id.has_value()) << "missing token " << text;
  return id.value_or(-1);
}

// -- unicode_text --

TEST(unicode_text, decodes_valid_and_replaces_each_invalid_byte) {
  EXPECT_EQ(utf8_to_codepoints("a\xC3\xA9\xE4\xB8\xAD\xF0\x9F\x98\x80"),
            (std::vector<uint32_t>{'a', 0xE9, 0x4E2D, 0x1F600}));
  // stray continuation, truncated 3-byte sequence, 0xFF: one U+FFFD per byte
  EXPECT_EQ(utf8_to_codepoints("\x80" "a" "\xE4\xB8" "b" "\xFF"),
            (std::vector<uint32_t>{0xFFFD, 'a', 0xFFFD, 0xFFFD, 'b', 0xFFFD}));
  // beyond U+10FFFF: every byte is invalid
  EXPECT_EQ(utf8_to_codepoints("\xF4\x90\x80\x80"), (std::vector<uint32_t>(4, 0xFFFD)));
}

TEST(unicode_text, categories) {
  EXPECT_TRUE(codepoint_category('a').is_letter());
  EXPECT_TRUE(codepoint_category(0x4E2D).is_letter());  // 中
  EXPECT_TRUE(codepoint_category('7').is_number());
  EXPECT_TRUE(codepoint_category(0x00B2).is_number());  // ²
  EXPECT_TRUE(codepoint_category(0x0663).is_number());  // Arabic-Indic three
  EXPECT_TRUE(codepoint_category(' ').is_whitespace());
  EXPECT_TRUE(codepoint_category('\n').is_whitespace());
  EXPECT_TRUE(codepoint_category(0x00A0).is_whitespace());
  EXPECT_TRUE(codepoint_category(0x3000).is_whitespace());
  EXPECT_FALSE(codepoint_category(0x200B).is_whitespace());  // zero width space is Cf
  EXPECT_TRUE(codepoint_category('!').is_punctuation());
  EXPECT_TRUE(codepoint_category(0x1F600).is_symbol());
  EXPECT_TRUE(codepoint_category(0x0301).is_mark());
  EXPECT_TRUE(codepoint_category(0x0378).is_undefined());
  EXPECT_FALSE(codepoint_category(0x0378).empty());
}

TEST(unicode_text, byte_level_map_is_a_bijection) {
  EXPECT_EQ(byte_to_unicode_text(' '), "Ġ");
  EXPECT_EQ(byte_to_unicode_text('\n'), "Ċ");
  EXPECT_EQ(byte_to_unicode_text('A'), "A");
  for (int b = 0; b < 256; ++b) {
    const auto cpts = utf8_to_codepoints(byte_to_unicode_text(static_cast<uint8_t>(b)));
    ASSERT_EQ(cpts.size(), 1u);
    EXPECT_EQ(unicode_to_byte(cpts[0]), std::optional<uint8_t>(static_cast<uint8_t>(b)));
  }
  EXPECT_FALSE(unicode_to_byte(0x4E2D).has_value());
}

TEST(unicode_text, incomplete_tail) {
  EXPECT_EQ(utf8_incomplete_tail("abc"), 0u);
  EXPECT_EQ(utf8_incomplete_tail("a\xC3"), 1u);
  EXPECT_EQ(utf8_incomplete_tail("a\xE4\xB8"), 2u);
  EXPECT_EQ(utf8_incomplete_tail("a\xE4\xB8\xAD"), 0u);
  EXPECT_EQ(utf8_incomplete_tail("\xF0\x9F\x98"), 3u);
  EXPECT_EQ(utf8_incomplete_tail("a\x80"), 0u);  // stray byte can never complete: emit it
}

// -- pre_tokenizer --

TEST(pre_tokenizer, gpt2_words_and_spaces) {
  EXPECT_EQ(split(pre_tokenizer_kind::gpt2, "Hello world"), (words{"Hello", " world"}));
  EXPECT_EQ(split(pre_tokenizer_kind::gpt2, "Hello, world!"), (words{"Hello", ",", " world", "!"}));
  EXPECT_EQ(split(pre_tokenizer_kind::gpt2, "Hi!!! ...ok"), (words{"Hi", "!!!", " ...", "ok"}));
  EXPECT_EQ(split(pre_tokenizer_kind::gpt2, " leading"), (words{" leading"}));
}

TEST(pre_tokenizer, gpt2_contractions_are_case_sensitive) {
  EXPECT_EQ(split(pre_tokenizer_kind::gpt2, "don't I'm we've they'll he'd it's you're"),
            (words{"don", "'t", " I", "'m", " we", "'ve", " they", "'ll", " he", "'d", " it", "'s",
                   " you", "'re"}));
  EXPECT_EQ(split(pre_tokenizer_kind::gpt2, "WE'RE DON'T"), (words{"WE", "'", "RE", " DON", "'", "T"}));
  EXPECT_EQ(split(pre_tokenizer_kind::llama3, "WE'RE"), (words{"WE", "'RE"}));
}

TEST(pre_tokenizer, whitespace_run_leaves_last_space_for_next_word) {
  EXPECT_EQ(split(pre_tokenizer_kind::gpt2, "a  b"), (words{"a", " ", " b"}));
  EXPECT_EQ(split(pre_tokenizer_kind::gpt2, "a    b"), (words{"a", "   ", " b"}));
  EXPECT_EQ(split(pre_tokenizer_kind::gpt2, "x  "), (words{"x", "  "}));  // trailing run stays whole
  EXPECT_EQ(split(pre_tokenizer_kind::gpt2, "a\n\nb"), (words{"a", "\n", "\n", "b"}));
  EXPECT_EQ(split(pre_tokenizer_kind::gpt2, "a \n b"), (words{"a", " \n", " b"}));
  EXPECT_EQ(split(pre_tokenizer_kind::gpt2, "\tx"), (words{"\t", "x"}));
  EXPECT_EQ(split(pre_tokenizer_kind::gpt2, "  \t\tdef"), (words{"  \t", "\t", "def"}));
  EXPECT_EQ(split(pre_tokenizer_kind::llama3, "a \n\n b"), (words{"a", " \n\n", " b"}));
}

TEST(pre_tokenizer, smollm_splits_digits_individually) {
  EXPECT_EQ(split(pre_tokenizer_kind::smollm, "abc 12345"), (words{"abc", " ", "1", "2", "3", "4", "5"}));
  EXPECT_EQ(split(pre_tokenizer_kind::gpt2, "abc 12345"), (words{"abc", " 12345"}));
  EXPECT_EQ(split(pre_tokenizer_kind::smollm, "1,000.5"), (words{"1", ",", "0", "0", "0", ".", "5"}));
  EXPECT_EQ(split(pre_tokenizer_kind::smollm, "x  2"), (words{"x", "  ", "2"}));
  EXPECT_EQ(split(pre_tokenizer_kind::smollm, "٣²"), (words{"٣", "²"}));
  EXPECT_EQ(split(pre_tokenizer_kind::llama3, "1234567"), (words{"123", "456", "7"}));
  EXPECT_EQ(split(pre_tokenizer_kind::default_bpe, "12345"), (words{"123", "45"}));
}

TEST(pre_tokenizer, emoji_cjk_accents_and_invalid_bytes) {
  EXPECT_EQ(split(pre_tokenizer_kind::gpt2, "I ❤️ 😀!"), (words{"I", " ❤️", " 😀!"}));
  EXPECT_EQ(split(pre_tokenizer_kind::gpt2, "中文 text"), (words{"中文", " text"}));
  EXPECT_EQ(split(pre_tokenizer_kind::gpt2, "café naïve"), (words{"café", " naïve"}));
  EXPECT_EQ(split(pre_tokenizer_kind::gpt2, "e\xCC\x81t"), (words{"e", "\xCC\x81", "t"}));  // Mn splits
  EXPECT_EQ(split(pre_tokenizer_kind::gpt2, "a\xFF" "b"), (words{"a", "\xEF\xBF\xBD", "b"}));
  EXPECT_EQ(split(pre_tokenizer_kind::gpt2, "a \xFF\xFE."), (words{"a", " \xEF\xBF\xBD\xEF\xBF\xBD."}));
}

TEST(pre_tokenizer, default_splits_punctuation_runs) {
  EXPECT_EQ(split(pre_tokenizer_kind::default_bpe, "a+=b`c"), (words{"a", "+=", "b", "`", "c"}));
}

TEST(pre_tokenizer, names_map_to_kinds) {
  EXPECT_EQ(pre_tokenizer::from_name("smollm")->kind(), pre_tokenizer_kind::smollm);
  EXPECT_EQ(pre_tokenizer::from_name("gpt-2")->kind(), pre_tokenizer_kind::gpt2);
  EXPECT_EQ(pre_tokenizer::from_name("gpt2")->kind(), pre_tokenizer_kind::gpt2);
  EXPECT_EQ(pre_tokenizer::from_name("llama-bpe")->kind(), pre_tokenizer_kind::llama3);
  EXPECT_EQ(pre_tokenizer::from_name("")->kind(), pre_tokenizer_kind::default_bpe);
  EXPECT_EQ(pre_tokenizer::from_name("qwen2")->kind(), pre_tokenizer_kind::qwen2);
  EXPECT_EQ(pre_tokenizer::from_name("deepseek-r1-qwen")->kind(), pre_tokenizer_kind::qwen2);
  EXPECT_EQ(pre_tokenizer::from_name("deepseek-r1-qwen")->kind_name(), "qwen2");
  EXPECT_EQ(pre_tokenizer::from_name("deepseek-r1-qwen")->name(), "deepseek-r1-qwen");
  EXPECT_EQ(pre_tokenizer::from_name("deepseek-llm")->kind(), pre_tokenizer_kind::deepseek_llm);
  EXPECT_EQ(pre_tokenizer::from_name("deepseek-coder")->kind(), pre_tokenizer_kind::deepseek_coder);
  EXPECT_EQ(pre_tokenizer::from_name("falcon")->kind(), pre_tokenizer_kind::falcon);
  EXPECT_FALSE(pre_tokenizer::from_name("qwen2")->clean_spaces());
  EXPECT_TRUE(pre_tokenizer::from_name("falcon")->clean_spaces());
  auto bad = pre_tokenizer::from_name("tekken");
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.err().code, errc::unsupported);
  EXPECT_NE(bad.err().message.find("tekken"), std::string::npos);
}

// -- tokenizer --

TEST(tokenizer, merges_words) {
  const tokenizer t = make_tiny();
  EXPECT_EQ(t.encode("Hello world", false, false),
            (std::vector<int32_t>{id_of(t, "Hello"), id_of(t, "Ġworld")}));
  EXPECT_EQ(t.encode("don't", false, false),
            (std::vector<int32_t>{byte_id('d'), byte_id('o'), byte_id('n'), id_of(t, "'t")}));
  EXPECT_EQ(t.encode("中", false, false), (std::vector<int32_t>{id_of(t, "ä¸Ń")}));
}

TEST(tokenizer, merge_priority_lowest_rank_then_leftmost) {
  const tokenizer t = make_tiny();
  // "b c" (rank 9) beats "a b" (rank 10)
  EXPECT_EQ(t.encode("abc", false, false), (std::vector<int32_t>{byte_id('a'), id_of(t, "bc")}));
  EXPECT_EQ(t.encode("aaa", false, false), (std::vector<int32_t>{id_of(t, "aa"), byte_id('a')}));
  EXPECT_EQ(t.encode("aaaa", false, false), (std::vector<int32_t>{id_of(t, "aa"), id_of(t, "aa")}));
  // "Hell o" needs "He ll" first, which needs "l l" and "H e"
  EXPECT_EQ(t.encode("Hello", false, false), (std::vector<int32_t>{id_of(t, "Hello")}));
}

TEST(tokenizer, merge_result_missing_from_vocab_falls_back_to_bytes) {
  const tokenizer t = make_tiny();
  EXPECT_EQ(t.encode("xy", false, false), (std::vector<int32_t>{byte_id('x'), byte_id('y')}));
}

TEST(tokenizer, smollm_digits_are_single_tokens) {
  const tokenizer t = make_tiny();
  EXPECT_EQ(t.encode(" 42", false, false), (std::vector<int32_t>{byte_id(' '), byte_id('4'), byte_id('2')}));
}

TEST(tokenizer, invalid_bytes_become_replacement_character) {
  const tokenizer t = make_tiny();
  EXPECT_EQ(t.encode("a\xFF", false, false),
            (std::vector<int32_t>{byte_id('a'), byte_id(0xEF), byte_id(0xBF), byte_id(0xBD)}));
  EXPECT_EQ(t.decode(t.encode("a\xFF" "b", false, false)), "a\xEF\xBF\xBD" "b");
}

TEST(tokenizer, special_tokens_parsed_only_when_asked) {
  const tokenizer t = make_tiny();
  const std::string chat = "<|im_start|>user\nHi<|im_end|>";
  const auto with = t.encode(chat, false, true);
  ASSERT_GE(with.size(), 3u);
  EXPECT_EQ(with.front(), 1);
  EXPECT_EQ(with.back(), 2);
  EXPECT_EQ(with[1], byte_id('u'));
  // Without parse_special, control tokens are plain text, but the user-defined "<|im" is still
  // cut out first.
  const auto without = t.encode(chat, false, false);
  EXPECT_EQ(without.front(), 3);
  EXPECT_EQ(std::count(without.begin(), without.end(), 1), 0);
  EXPECT_EQ(std::count(without.begin(), without.end(), 2), 0);
  EXPECT_EQ(t.decode(without), chat);
  EXPECT_EQ(t.decode(with), chat);
  // Longest special text first: "<|im_start|>" wins over its prefix "<|im".
  EXPECT_EQ(t.encode("<|im_start|><|im", false, true), (std::vector<int32_t>{1, 3}));
  EXPECT_EQ(t.encode("<|im_end|>x<|im_end|>", false, true), (std::vector<int32_t>{2, byte_id('x'), 2}));
}

TEST(tokenizer, add_special_follows_vocabulary) {
  const tokenizer plain = make_tiny();
  EXPECT_FALSE(plain.add_bos());  // smollm's default
  EXPECT_EQ(plain.encode("a", true, false), (std::vector<int32_t>{byte_id('a')}));

  auto v = tiny_vocab();
  v.add_bos = true;
  v.add_eos = true;
  const tokenizer both = std::move(tokenizer::from_vocab(v)).value();
  EXPECT_EQ(both.encode("a", true, false), (std::vector<int32_t>{1, byte_id('a'), 2}));
  EXPECT_EQ(both.encode("a", false, false), (std::vector<int32_t>{byte_id('a')}));
  EXPECT_EQ(both.encode("", true, false), (std::vector<int32_t>{1, 2}));
  EXPECT_TRUE(make_tiny("llama3").add_bos());
}

TEST(tokenizer, decode_and_pieces) {
  const tokenizer t = make_tiny();
  EXPECT_EQ(t.token_to_piece(id_of(t, "Ġworld")), " world");
  EXPECT_EQ(t.token_to_piece(1), "<|im_start|>");
  EXPECT_EQ(t.token_to_piece(1, false), "");
  EXPECT_EQ(t.token_to_piece(3, false), "<|im");  // user-defined always renders
  EXPECT_EQ(t.token_to_piece(-1), "");
  EXPECT_EQ(t.token_to_piece(t.n_vocab()), "");
  const std::vector<int32_t> ids = {1, id_of(t, "Hello"), 2};
  EXPECT_EQ(t.decode(ids), "<|im_start|>Hello<|im_end|>");
  EXPECT_EQ(t.decode(ids, false), "Hello");
}

TEST(tokenizer, accessors) {
  const tokenizer t = make_tiny();
  EXPECT_EQ(t.n_vocab(), static_cast<int32_t>(4 + 256 + tiny_merges.size() - 1));
  EXPECT_EQ(t.bos(), 1);
  EXPECT_EQ(t.eos(), 2);
  EXPECT_EQ(t.token_text(1), "<|im_start|>");
  EXPECT_EQ(t.token_text(12345), "");
  EXPECT_EQ(t.find_token("<|im_end|>"), std::optional<int32_t>(2));
  EXPECT_FALSE(t.find_token("nope").has_value());
  EXPECT_TRUE(t.is_eog(2));
  EXPECT_TRUE(t.is_eog(0));  // "<|endoftext|>" by text
  EXPECT_FALSE(t.is_eog(1));
  EXPECT_FALSE(t.is_eog(byte_id('a')));
  EXPECT_TRUE(t.is_control(1));
  EXPECT_EQ(t.type(3), token_type::user_defined);
  EXPECT_EQ(t.type(byte_id('a')), token_type::normal);
}

TEST(tokenizer, round_trips_valid_utf8) {
  const std::vector<std::string> pool = {
      "Hello", " world", "  ", "\t", "\n", "\r\n", "don't", "I'M", "123", "4,567", "é", "ß",
      "中文", "日本語", "한국어", "😀", "👍🏽", "\u00A0", "\u2028", "!?", "...", "<|im_start|>",
      "<|im", "x", "y", "«»", "\u0301", "$", "`", "\xEF\xBF\xBD", "Ж", "٣"};
  std::mt19937 rng(7);
  for (const char* pre : {"smollm", "gpt2", "llama3", "default"}) {
    const tokenizer t = make_tiny(pre);
    for (int i = 0; i < 300; ++i) {
      std::string s;
      const int n = 1 + static_cast<int>(rng() % 12);
      for (int k = 0; k < n; ++k) s += pool[rng() % pool.size()];
      // plus a few random code points
      for (int k = 0; k < 2; ++k) {
        uint32_t cpt = rng() % 0x10FFFF;
        if (cpt >= 0xD800 && cpt <= 0xDFFF) cpt = 'q';
        append_utf8(s, cpt);
      }
      for (bool special : {false, true}) {
        EXPECT_EQ(t.decode(t.encode(s, false, special)), s) << pre << " special=" << special;
      }
    }
  }
}

TEST(tokenizer, stream_never_splits_characters) {
  const tokenizer t = make_tiny();
  token_text_stream stream(t);
  // "é" is two byte tokens; "中" one merged token
  EXPECT_EQ(stream.push(byte_id(0xC3)), "");
  EXPECT_EQ(stream.push(byte_id(0xA9)), "é");
  EXPECT_EQ(stream.push(byte_id(0xF0)), "");
  EXPECT_EQ(stream.push(byte_id(0x9F)), "");
  EXPECT_EQ(stream.push(byte_id(0x98)), "");
  EXPECT_EQ(stream.push(byte_id(0x80)), "😀");
  EXPECT_EQ(stream.push(id_of(t, "ä¸Ń")), "中");
  EXPECT_EQ(stream.push(byte_id(0xE4)), "");
  EXPECT_EQ(stream.flush(), "\xE4");
  EXPECT_EQ(stream.push(2), "<|im_end|>");
}

TEST(tokenizer, encodes_ten_thousand_characters_quickly) {
  const tokenizer t = make_tiny();
  std::string text;
  while (text.size() < 10000) text += "Hello world, it's 2024! 中文 text\twith  spaces\n";
  const auto start = std::chrono::steady_clock::now();
  const auto ids = t.encode(text, false, true);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(t.decode(ids), text);
  EXPECT_LT(ms, 1000.0);  // typically a few ms in a release build
  RecordProperty("encode_10k_ms", std::to_string(ms));
}

TEST(tokenizer, rejects_bad_vocabularies) {
  auto v = tiny_vocab("no-such-pre");
  auto t = tokenizer::from_vocab(v);
  ASSERT_FALSE(t.has_value());
  EXPECT_EQ(t.err().code, errc::unsupported);
  EXPECT_NE(t.err().message.find("no-such-pre"), std::string::npos);

  v = tiny_vocab();
  v.types.pop_back();
  EXPECT_EQ(tokenizer::from_vocab(v).err().code, errc::invalid_argument);

  v = tiny_vocab();
  v.bos = 100000;
  EXPECT_EQ(tokenizer::from_vocab(v).err().code, errc::invalid_argument);
}

TEST(tokenizer, from_gguf) {
  const tokenizer_vocab v = tiny_vocab();
  gguf_writer w;
  w.add_string("tokenizer.ggml.model", "gpt2");
  w.add_string("tokenizer.ggml.pre", "smollm");
  w.add_string_array("tokenizer.ggml.tokens", v.tokens);
  w.add_int32_array("tokenizer.ggml.token_type", v.types);
  w.add_string_array("tokenizer.ggml.merges", v.merges);
  w.add_uint32("tokenizer.ggml.bos_token_id", 1);
  w.add_uint32("tokenizer.ggml.eos_token_id", 2);
  w.add_bool("tokenizer.ggml.add_bos_token", true);
  const auto bytes = w.bytes();
  auto file = gguf_file::from_bytes(bytes);
  ASSERT_TRUE(file.has_value()) << file.err().what();
  auto t = tokenizer::from_gguf(**file);
  ASSERT_TRUE(t.has_value()) << t.err().what();
  EXPECT_TRUE(t->add_bos());
  EXPECT_EQ(t->encode("Hello world", true, false),
            (std::vector<int32_t>{1, id_of(*t, "Hello"), id_of(*t, "Ġworld")}));

  gguf_writer bert;
  bert.add_string("tokenizer.ggml.model", "bert");
  bert.add_string_array("tokenizer.ggml.tokens", {"[UNK]", "[CLS]", "[SEP]"});
  auto bert_file = gguf_file::from_bytes(bert.bytes());
  ASSERT_TRUE(bert_file.has_value()) << bert_file.err().what();
  auto bert_tok = tokenizer::from_gguf(**bert_file);
  ASSERT_FALSE(bert_tok.has_value());
  EXPECT_EQ(bert_tok.err().code, errc::unsupported);
  EXPECT_NE(bert_tok.err().message.find("'bert'"), std::string::npos);
}

}  // namespace
}  // namespace fw
