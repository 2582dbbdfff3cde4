// regex_grammar: which texts a regex's grammar admits whole (guided_regex), what JSON Schema's
// pattern admits inside a JSON string (a match anywhere unless anchored, written with JSON's
// escapes), and what is refused by name.
#include <gtest/gtest.h>

#include <random>
#include <regex>
#include <string>

#include "runtime/sample/grammar_recognizer.hpp"
#include "runtime/sample/json_schema.hpp"
#include "runtime/sample/regex_grammar.hpp"

namespace fw {
namespace {

std::shared_ptr<const grammar> compile(const std::string& pattern) {
  auto g = regex_grammar(pattern);
  EXPECT_TRUE(g) << (g ? "" : g.err().message);
  return g ? *g : nullptr;
}

bool admits(const std::shared_ptr<const grammar>& g, const std::string& text) {
  grammar_recognizer r(g);
  return r.feed(text) && r.can_end();
}

std::string refusal(const std::string& pattern) {
  auto g = regex_grammar(pattern);
  return g ? "" : g.err().message;
}

TEST(regex_grammar, admits_exactly_what_std_regex_matches_whole) {
  // Each pattern against texts, compared with std::regex_match (ECMAScript) on the same texts.
  const std::vector<std::string> patterns = {
      "[0-9]{3}-[0-9]{4}", "(yes|no|maybe)", "a*b+c?", R"(\d+(\.\d{1,2})?)", "[A-Z][a-z]*( [A-Z][a-z]*)*",
      "(?:ab|a)(?:bc|c)", R"([^,\s]+(,[^,\s]+){0,2})", R"(\w+@\w+\.(com|org))", "x{2,}", "(a|b)*abb", "[-a-c]+",
      R"(\(\d\))", "a.c", "^ab$", "colou?r"};
  const std::vector<std::string> texts = {
      "", "555-1234", "55-1234", "yes", "maybe", "yess", "bbb", "abbc", "c", "3.14", "3.141", "10", "Hello World",
      "hello", "abc", "ac", "a,b,c", "a,b,c,d", "a b", "me@site.com", "me@site.net", "xx", "xxxx", "x", "aabb",
      "babb", "ab", "-ab-", "(7)", "a\nc", "a.c", "color", "colour", "colouur", "ab\n"};
  for (const auto& p : patterns) {
    const auto g = compile(p);
    const std::regex re(p, std::regex::ECMAScript);
    for (const auto& t : texts) EXPECT_EQ(admits(g, t), std::regex_match(t, re)) << "/" << p << "/ on \"" << t << "\"";
  }
}

TEST(regex_grammar, random_walks_write_matching_text) {
  const std::string p = R"(([A-Z][a-z]{1,6} ){1,3}\d{2}(-[a-f0-9]{2,4})?)";
  const auto g = compile(p);
  const std::regex re(p, std::regex::ECMAScript);
  std::mt19937 rng(5);
  for (int walk = 0; walk < 200; ++walk) {
    grammar_recognizer r(g);
    std::string text;
    while (!r.done()) {
      if (r.can_end() && rng() % 3 == 0) break;
      byte_set ok, same;
      r.next_bytes(&ok, &same);
      std::vector<char> choices;
      for (unsigned c = 0; c < 128; ++c)
        if (ok.has(static_cast<uint8_t>(c))) choices.push_back(static_cast<char>(c));
      ASSERT_FALSE(choices.empty()) << text;
      const char c = choices[rng() % choices.size()];
      ASSERT_TRUE(r.feed(c));
      text += c;
    }
    EXPECT_TRUE(std::regex_match(text, re)) << text;
  }
}

TEST(regex_grammar, non_ascii_characters_are_whole_utf8) {
  const auto g = compile("caf\u00e9 [^a-z]+");
  EXPECT_TRUE(admits(g, "caf\u00e9 \u65e5\u672c"));
  EXPECT_TRUE(admits(g, "caf\u00e9 ABC"));
  EXPECT_FALSE(admits(g, "cafe abc"));
  EXPECT_FALSE(admits(g, "caf\u00e9 \xe6\x97"));  // a character cut short
  EXPECT_TRUE(admits(compile(R"(\u00e9\x41)"), "\u00e9A"));
}

TEST(regex_grammar, what_it_cannot_honour_is_refused_by_name) {
  EXPECT_NE(refusal(R"((a)\1)").find("backreferences"), std::string::npos);
  EXPECT_NE(refusal("a(?=b)").find("lookaround"), std::string::npos);
  EXPECT_NE(refusal(R"(\bword)").find("word boundaries"), std::string::npos);
  EXPECT_NE(refusal("(a").find("unterminated group"), std::string::npos);
  EXPECT_NE(refusal("a)").find("unmatched ')'"), std::string::npos);
  EXPECT_NE(refusal("*a").find("nothing to repeat"), std::string::npos);
  EXPECT_NE(refusal("[z-a]").find("out of order"), std::string::npos);
  EXPECT_NE(refusal("[\u00e9]").find("non-ASCII"), std::string::npos);
  EXPECT_NE(refusal("a{5000}").find("count above"), std::string::npos);
  EXPECT_NE(refusal("a{3,2}").find("out of order"), std::string::npos);
  EXPECT_NE(refusal("a{,2}").find("'{' must start a count"), std::string::npos);
  EXPECT_NE(refusal("a^b").find("only at the pattern's start"), std::string::npos);
  EXPECT_NE(refusal("(a*)*").find("can match nothing"), std::string::npos);
  EXPECT_NE(refusal("[abc").find("unterminated class"), std::string::npos);
  EXPECT_NE(refusal(R"(\q)").find("unknown escape"), std::string::npos);
  EXPECT_NE(refusal("(a").find("offset 2"), std::string::npos) << refusal("(a");
}

TEST(regex_grammar, hostile_and_ambiguous_patterns_are_refused_or_stay_shallow) {
  EXPECT_NE(refusal(std::string(100000, '(') + "a" + std::string(100000, ')')).find("nested deeper than 64"),
            std::string::npos);
  std::string many;
  for (int i = 0; i < 800; ++i) many += "a{0,4096}";
  EXPECT_NE(refusal(many).find("too large"), std::string::npos);
  EXPECT_NE(refusal("a|b$").find("top-level '|'"), std::string::npos);
  EXPECT_NE(refusal("^a|b").find("top-level '|'"), std::string::npos);
  EXPECT_TRUE(admits(compile("^(a|b)$"), "b"));
  EXPECT_NE(refusal("[]a]").find("']' first"), std::string::npos);
  EXPECT_NE(refusal("[^]]").find("']' first"), std::string::npos);
  EXPECT_TRUE(admits(compile(R"([\]a]+)"), "]a]"));
  // 300 optionals in a row: skipping them is a loop, not a recursion per optional.
  std::string three_hundred;
  for (int i = 0; i < 30; ++i) three_hundred += "a?b?c?d?e?f?g?h?i?j?";
  const auto optionals = compile(three_hundred + "z");
  EXPECT_TRUE(admits(optionals, "z"));
  EXPECT_TRUE(admits(optionals, "aajz"));
  EXPECT_FALSE(admits(optionals, "zz"));
}

TEST(regex_grammar, control_characters_in_a_schema_pattern_are_written_as_json_escapes) {
  auto g = json_schema_grammar(R"({"type":"string","pattern":"^a\\u000bb[\\x01-\\x02]$"})");
  ASSERT_TRUE(g) << g.err().message;
  EXPECT_TRUE(admits(*g, R"("a\u000bb\u0001")"));
  EXPECT_FALSE(admits(*g, "\"a\x0b" "b\x01\""));  // raw control bytes: not JSON
}

TEST(regex_grammar, a_schema_pattern_is_searched_inside_a_json_string) {
  auto g = json_schema_grammar(R"({"type":"object","properties":{"id":{"type":"string","pattern":"^[A-Z]{2}-\\d+$"},
      "note":{"type":"string","pattern":"ok"},"q":{"type":"string","pattern":"^say \"hi\"\\\\$"}},"required":["id","note","q"]})");
  ASSERT_TRUE(g) << g.err().message;
  auto doc = [](const std::string& id, const std::string& note, const std::string& q) {
    return R"({"id":")" + id + R"(","note":")" + note + R"(","q":")" + q + R"("})";
  };
  const std::string q = R"(say \"hi\"\\)";  // the value say "hi"\ as JSON string text
  EXPECT_TRUE(admits(*g, doc("AB-12", "ok", q)));
  EXPECT_TRUE(admits(*g, doc("AB-12", "it is ok, really", q)));  // unanchored: a match anywhere
  EXPECT_FALSE(admits(*g, doc("AB-12", "fine", q)));
  EXPECT_FALSE(admits(*g, doc("AB-12x", "ok", q)));  // anchored at both ends
  EXPECT_FALSE(admits(*g, doc("xAB-12", "ok", q)));
  EXPECT_FALSE(admits(*g, doc("AB-12", "ok", R"(say "hi"\)")));  // a raw quote would end the string
}

}  // namespace
}  // namespace fw
