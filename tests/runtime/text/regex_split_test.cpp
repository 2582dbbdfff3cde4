// regex_split (PCRE2 run the way llama.cpp runs std::regex) and the pre-tokenizers built on it
// or on the llama3-style matcher: qwen2, qwen35, deepseek-llm, deepseek-coder, falcon. The real
// vocabularies are checked against llama.cpp in tests/model/vocab_reference_test.cpp.
#include <gtest/gtest.h>

#include <thread>

#include "runtime/text/pre_tokenizer.hpp"
#include "runtime/text/regex_split.hpp"
#include "runtime/text/unicode_text.hpp"

namespace fw {
namespace {

using words = std::vector<std::string>;

words split_with(const regex_split& r, std::string_view text) {
  const std::vector<uint32_t> cpts = utf8_to_codepoints(text);
  std::vector<codepoint_flags> flags;
  for (uint32_t c : cpts) flags.push_back(codepoint_category(c));
  words out;
  size_t start = 0;
  for (size_t len : r.split(cpts, flags, {cpts.size()})) {
    std::string w;
    for (size_t i = start; i < start + len; ++i) append_utf8(w, cpts[i]);
    out.push_back(std::move(w));
    start += len;
  }
  return out;
}

words pre(std::string_view name, std::string_view text) {
  auto p = pre_tokenizer::from_name(name);
  EXPECT_TRUE(p.has_value());
  return p->split_text(text);
}

TEST(regex_split, matches_and_gaps_become_words) {
  auto r = regex_split::compile("[0-9]+");
  ASSERT_TRUE(r.has_value()) << r.err().what();
  EXPECT_FALSE(r->collapsed());
  EXPECT_EQ(split_with(*r, "ab12cd345"), (words{"ab", "12", "cd", "345"}));
  EXPECT_EQ(split_with(*r, "none"), (words{"none"}));
  EXPECT_EQ(split_with(*r, ""), (words{}));
}

TEST(regex_split, categories_run_over_collapsed_text) {
  auto r = regex_split::compile("\\s?\\p{L}+");
  ASSERT_TRUE(r.has_value()) << r.err().what();
  EXPECT_TRUE(r->collapsed());
  // Non-ASCII letters count (Ж, é, 中), non-ASCII whitespace counts as \s (U+3000).
  EXPECT_EQ(split_with(*r, "a Жé\u3000中!"), (words{"a", " Жé", "\u3000中", "!"}));
  auto n = regex_split::compile("\\p{N}");
  ASSERT_TRUE(n.has_value());
  EXPECT_EQ(split_with(*n, "x12٣"), (words{"x", "1", "2", "٣"}));
}

TEST(regex_split, non_ascii_whitespace_is_vertical_tab_for_plain_patterns) {
  auto r = regex_split::compile("\\s+$");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(split_with(*r, "ab \u00a0\u3000"), (words{"ab", " \u00a0\u3000"}));
  EXPECT_EQ(split_with(*r, "ab  x"), (words{"ab  x"}));
  // $ is the end of the piece only (PCRE2 alone would also match before a final newline).
  auto end = regex_split::compile("[a-z]$");
  ASSERT_TRUE(end.has_value());
  EXPECT_EQ(split_with(*end, "ab\n"), (words{"ab\n"}));
  EXPECT_EQ(split_with(*end, "ab"), (words{"a", "b"}));
}

TEST(regex_split, surrogates_and_replacement_characters_never_match_classes) {
  auto r = regex_split::compile("[一-龥ࠀ-一가-퟿]+");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(split_with(*r, "a\xED\xA0\x80中文\xFF"), (words{"a\xED\xA0\x80", "中文", "\xEF\xBF\xBD"}));
}

TEST(regex_split, rejects_bad_and_empty_matching_patterns) {
  auto bad = regex_split::compile("[unterminated");
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.err().code, errc::invalid_argument);
  auto empty = regex_split::compile("a*");
  ASSERT_FALSE(empty.has_value());
  EXPECT_NE(empty.err().message.find("empty"), std::string::npos);
}

TEST(regex_split, is_safe_to_share_between_threads) {
  auto r = regex_split::compile("\\s?\\p{L}+");
  ASSERT_TRUE(r.has_value());
  std::string text;
  for (int i = 0; i < 200; ++i) text += "word Жé 12 ";
  const words expected = split_with(*r, text);
  std::vector<std::thread> threads;
  std::vector<int> ok(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) ok[t] += split_with(*r, text) == expected;
    });
  }
  for (auto& th : threads) th.join();
  for (int v : ok) EXPECT_EQ(v, 50);
}

TEST(pre_tokenizer_families, qwen2_splits_every_digit) {
  EXPECT_EQ(pre("qwen2", "abc 12345 x"), (words{"abc", " ", "1", "2", "3", "4", "5", " x"}));
  EXPECT_EQ(pre("llama3", "abc 12345 x"), (words{"abc", " ", "123", "45", " x"}));
  EXPECT_EQ(pre("qwen2", "I'M  here\n\n ok"), (words{"I", "'M", " ", " here", "\n\n", " ok"}));
}

TEST(pre_tokenizer_families, qwen35_keeps_combining_marks_in_words) {
  // qwen2: the mark is the optional non-letter that may lead a letter run.
  EXPECT_EQ(pre("qwen2", "e\u0301t"), (words{"e", "\u0301t"}));
  EXPECT_EQ(pre("qwen35", "e\u0301t"), (words{"e\u0301t"}));
}

TEST(pre_tokenizer_families, deepseek_llm_regex_sequence) {
  // newlines alone; ASCII/Latin letter runs with one leading space; punctuation runs; CJK runs;
  // digit runs; what no step matches stays as gaps.
  EXPECT_EQ(pre("deepseek-llm", "Hello, world!\n中文 123"),
            (words{"Hello", ",", " world", "!", "\n", "中文", " ", "123"}));
  EXPECT_EQ(pre("deepseek-llm", "ab   "), (words{"ab", "   "}));
}

TEST(pre_tokenizer_families, deepseek_coder_splits_digits_and_unicode_letters) {
  EXPECT_EQ(pre("deepseek-coder", "x=42; Жé\n"), (words{"x", "=", "4", "2", ";", " Жé", "\n"}));
}

TEST(pre_tokenizer_families, falcon_punctuation_runs_include_backtick) {
  EXPECT_EQ(pre("falcon", "a+=`b` 1234567"), (words{"a", "+=`", "b", "`", " ", "123", "456", "7"}));
  EXPECT_EQ(pre("default", "a+=`b`"), (words{"a", "+=", "`", "b", "`"}));
}

}  // namespace
}  // namespace fw
