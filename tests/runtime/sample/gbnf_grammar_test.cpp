// gbnf_grammar -> grammar -> grammar_recognizer: which texts a GBNF grammar admits, code point
// classes as UTF-8 (grammar::add_codepoints against every code point's encoding), random walks
// that an independent parser accepts, and what is refused with which line and column.
#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <string>

#include "runtime/sample/gbnf_grammar.hpp"
#include "runtime/sample/grammar_recognizer.hpp"
#include "runtime/text/unicode_text.hpp"

namespace fw {
namespace {

std::shared_ptr<const grammar> compile(const std::string& text) {
  auto g = gbnf_grammar(text);
  EXPECT_TRUE(g) << (g ? "" : g.err().message);
  return g ? *g : nullptr;
}

bool admits(const std::shared_ptr<const grammar>& g, const std::string& text) {
  grammar_recognizer r(g);
  return r.feed(text) && r.can_end();
}

std::string refusal(const std::string& text) {
  auto g = gbnf_grammar(text);
  return g ? "" : g.err().message;
}

// Arithmetic over decimals, written over several lines with comments; `factor` is used before
// it is defined.
const char* arithmetic = R"gbnf(# sums of products
root   ::= expr
expr   ::= term ( ws [-+] ws term )*
term   ::= factor (ws [*/] ws
             factor)*      # a group may go on over lines
factor ::= number | "(" ws expr ws ")"
number ::= [0-9]+ ( "." [0-9]{1,3} )?
ws     ::= " "?
)gbnf";

// An independent recursive-descent check of the same language.
struct arithmetic_parser {
  const std::string& s;
  size_t p = 0;
  void ws() {
    if (p < s.size() && s[p] == ' ') ++p;
  }
  bool number() {
    const size_t start = p;
    while (p < s.size() && isdigit(static_cast<unsigned char>(s[p]))) ++p;
    if (p == start) return false;
    if (p < s.size() && s[p] == '.') {
      const size_t d = ++p;
      while (p < s.size() && isdigit(static_cast<unsigned char>(s[p])) && p - d < 3) ++p;
      if (p == d) return false;
    }
    return true;
  }
  bool factor() {
    if (p < s.size() && s[p] == '(') {
      ++p;
      ws();
      if (!expr()) return false;
      ws();
      if (p >= s.size() || s[p] != ')') return false;
      ++p;
      return true;
    }
    return number();
  }
  bool chain(bool (arithmetic_parser::*item)(), const char* ops) {
    if (!(this->*item)()) return false;
    for (;;) {
      const size_t back = p;
      ws();
      if (p < s.size() && std::string(ops).find(s[p]) != std::string::npos) {
        ++p;
        ws();
        if (!(this->*item)()) return false;
      } else {
        p = back;
        return true;
      }
    }
  }
  bool term() { return chain(&arithmetic_parser::factor, "*/"); }
  bool expr() { return chain(&arithmetic_parser::term, "-+"); }
  bool whole() { return expr() && p == s.size(); }
};

TEST(gbnf_grammar, a_grammar_over_lines_admits_its_sentences) {
  const auto g = compile(arithmetic);
  for (const std::string ok : {"1", "1 + 2*(3 - 4.5)", "(((7)))", "2.125/ 8", "10-(2 *3)"})
    EXPECT_TRUE(admits(g, ok)) << ok;
  for (const std::string bad : {"", "1 +", "(1", "1..2", "1.2345", "+1", "1  + 2", "a"})
    EXPECT_FALSE(admits(g, bad)) << bad;
}

TEST(gbnf_grammar, random_walks_write_sentences_an_independent_parser_accepts) {
  const auto g = compile(arithmetic);
  std::mt19937 rng(11);
  for (int walk = 0; walk < 300; ++walk) {
    grammar_recognizer r(g);
    std::string text;
    while (!r.done()) {
      ASSERT_LT(text.size(), 3000u) << text;
      if (r.can_end() && rng() % 4 == 0) break;
      byte_set ok, same;
      r.next_bytes(&ok, &same);
      std::vector<uint8_t> choices;
      for (unsigned c = 0; c < 256; ++c)
        if (ok.has(static_cast<uint8_t>(c)) && !(c == '(' && text.size() > 200)) choices.push_back(static_cast<uint8_t>(c));
      if (choices.empty()) break;
      const uint8_t c = choices[rng() % choices.size()];
      ASSERT_TRUE(r.feed(static_cast<char>(c)));
      text += static_cast<char>(c);
    }
    if (!r.can_end()) continue;  // stopped short by the '(' bound
    arithmetic_parser check{text};
    EXPECT_TRUE(check.whole()) << text;
  }
}

TEST(gbnf_grammar, classes_literals_and_dot_are_code_points) {
  const auto g = compile(R"gbnf(root ::= [α-ω]+ " " [^a-z\n] "\u00e9\x21" . "\U0001F600"?)gbnf");
  EXPECT_TRUE(admits(g, "αβγ Zé!x"));
  EXPECT_TRUE(admits(g, "ω éé!\xf0\x9f\x98\x80\xf0\x9f\x98\x80"));  // '.' takes a 4-byte character
  EXPECT_FALSE(admits(g, "αβγ aé!x"));   // negated class
  EXPECT_FALSE(admits(g, "αβγ \né!x"));  // escapes inside the class
  EXPECT_FALSE(admits(g, "a Zé!x"));     // outside the range
  EXPECT_FALSE(admits(g, "α Z\xc3\xa9!\xc3"));  // half a character
  EXPECT_FALSE(admits(g, "α Z\xc3\xa9!\xed\xa0\x80"));  // a surrogate's bytes are no character
  EXPECT_FALSE(admits(g, "α Z\xc3\xa9!\xc0\x80"));      // nor an overlong form
}

TEST(gbnf_grammar, codepoint_ranges_take_exactly_their_characters) {
  // Ranges chosen at the encodings' edges, and random ones; every code point's UTF-8 is checked
  // (every 3rd one away from the edges).
  std::vector<std::pair<uint32_t, uint32_t>> ranges = {{0, 0x7f},         {0x7f, 0x80},     {0x7ff, 0x800},
                                                       {0xd7ff, 0xe000},  {0xfffd, 0x10000}, {0x10000, 0x10ffff},
                                                       {0x41, 0x10ffff}, {0x3a9, 0x2fff}};
  std::mt19937 rng(3);
  for (int k = 0; k < 6; ++k) {
    uint32_t a = rng() % 0x110000, b = rng() % 0x110000;
    ranges.emplace_back(std::min(a, b), std::max(a, b));
  }
  for (const auto& [lo, hi] : ranges) {
    auto gm = std::make_shared<grammar>();
    const uint32_t r = gm->add_rule();
    gm->add_codepoints(r, lo, hi);
    gm->set_root(r);
    const std::shared_ptr<const grammar> g = gm;
    for (uint32_t cp = 0; cp <= 0x10ffff; ++cp) {
      const bool near = cp - lo < 3 || lo - cp < 3 || cp - hi < 3 || hi - cp < 3 || (cp & 0xffff) < 2 ||
                        (cp >= 0xd7fe && cp <= 0xe001) || cp < 0x900;
      if (!near && cp % 97 != 0) continue;
      if (cp >= 0xd800 && cp <= 0xdfff) continue;
      ASSERT_EQ(admits(g, codepoint_to_utf8(cp)), cp >= lo && cp <= hi) << std::hex << lo << "-" << hi << " at " << cp;
    }
  }
}

TEST(gbnf_grammar, repetition_counts_and_rule_order) {
  const auto g = compile("root ::= a{2} b {1,3} c{2,}\nc ::= \"c\"\na ::= \"a\"\nb ::= \"b\"");  // "b {1,3}": llama.cpp allows the space
  EXPECT_TRUE(admits(g, "aabcc"));
  EXPECT_TRUE(admits(g, "aabbbccccc"));
  EXPECT_FALSE(admits(g, "abcc"));
  EXPECT_FALSE(admits(g, "aabbbbcc"));
  EXPECT_FALSE(admits(g, "aabc"));
  EXPECT_TRUE(admits(compile("root ::= \"a\" * \"b\" +"), "aabb"));
  // Alternatives may start a line; an empty alternative matches nothing.
  const auto opt = compile("root ::= \"x\" tail\ntail ::=\n  \"y\"\n  | \"z\"\n  |\n");
  EXPECT_TRUE(admits(opt, "xy"));
  EXPECT_TRUE(admits(opt, "x"));
  EXPECT_FALSE(admits(opt, "xyz"));
}

TEST(gbnf_grammar, what_it_cannot_honour_is_refused_with_where) {
  struct bad {
    std::string text;
    std::string says;
  };
  const std::vector<bad> cases = {
      {"", "empty"},
      {"start ::= \"a\"", "no rule `root`"},
      {"root ::= item\n", "line 1, column 10: the rule item is used but not defined"},
      {"root ::= \"a\"\nroot ::= \"b\"", "line 2, column 1: the rule root is defined twice"},
      {"root ::= expr\nexpr ::= expr \"+\" \"1\" | \"1\"", "left recursion (rule expr)"},
      {"root ::= (\"a\"?)*", "left recursion"},
      {"root ::= \"abc", "unterminated literal"},
      {"root ::= \"a\nb\"", "a line break inside a literal"},
      {"root ::= [a-", "unterminated class"},
      {"root ::= [z-a]", "range out of order"},
      {"root ::= <[1000]>", "token references"},
      {"root ::= \"\\q\"", "unknown escape \\q"},
      {"root ::= \"\\u12\"", "\\u needs 4 hex digits"},
      {"root ::= \"\\ud800\"", "not a character"},
      {"root ::= \"\xff\"", "not valid UTF-8"},
      {"root ::= \"a\"{5000}", "a count above 4096"},
      {"root ::= \"a\"{3,1}", "out of order"},
      {"root ::= (\"a\"", "unterminated group"},
      {"root ::= \"a\" )", "unexpected ')'"},
      {"root = \"a\"", "'::=' was expected"},
  };
  for (const auto& c : cases) {
    const std::string why = refusal(c.text);
    EXPECT_NE(why.find(c.says), std::string::npos) << c.text << " -> " << why;
  }
  // Sizes are bounded while reading, not after: a long line of repetitions is refused before it
  // is built; a long chain of rules is checked in linear time (then refused: too deep to start).
  std::string flat = "root ::=";
  for (int i = 0; i < 600; ++i) flat += " \"a\"{4096}";
  EXPECT_NE(refusal(flat).find("too large"), std::string::npos);
  std::string chain = "root ::= r0\n";
  for (int i = 0; i < 100000; ++i) chain += "r" + std::to_string(i) + " ::= r" + std::to_string(i + 1) + "\n";
  chain += "r100000 ::= \"a\"\n";
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_NE(refusal(chain).find("too deep"), std::string::npos);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 10.0);
  // Deep nesting is refused, not a stack overflow.
  EXPECT_NE(refusal("root ::= " + std::string(100000, '(') + "\"a\"" + std::string(100000, ')')).find("deeper than 64"),
            std::string::npos);
}

}  // namespace
}  // namespace fw
