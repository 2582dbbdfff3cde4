#include "runtime/sample/regex_grammar.hpp"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "runtime/sample/grammar_recognizer.hpp"
#include "runtime/sample/json_schema.hpp"

namespace fw {
namespace {

using element = grammar::element;
using seq = std::vector<element>;

/// A class of characters: ASCII members, and whether every non-ASCII character is in it.
struct char_class {
  byte_set ascii;
  bool non_ascii = false;
  void negate() {
    byte_set out;
    for (unsigned c = 0; c < 128; ++c)
      if (!ascii.has(static_cast<uint8_t>(c))) out.add(static_cast<uint8_t>(c));
    ascii = out;
    non_ascii = !non_ascii;
  }
  void add(const char_class& o) {
    for (size_t i = 0; i < ascii.bits.size(); ++i) ascii.bits[i] |= o.ascii.bits[i];
    non_ascii = non_ascii || o.non_ascii;
  }
};

char_class of_range(uint8_t lo, uint8_t hi) {
  char_class c;
  c.ascii.add_range(lo, hi);
  return c;
}

class regex_compiler {
 public:
  regex_compiler(grammar& g, std::string_view p, regex_target t) : g_(g), p_(p), target_(t) {}

  expected<uint32_t> compile(bool search) {
    bool anchored_start = false, anchored_end = false;
    if (!p_.empty() && p_[0] == '^') {
      anchored_start = true;
      ++pos_;
    }
    auto body = alternation(0);
    if (!body) return body;
    if (pos_ < p_.size()) {
      if (p_[pos_] == ')') return fail("an unmatched ')'");
      if (p_[pos_] == '$' && pos_ + 1 == p_.size()) anchored_end = true;
      else return fail("unexpected character");
    }
    if (too_big_) return fail("the pattern's grammar is too large");
    if ((anchored_start || anchored_end) && top_level_alternation_)
      return fail("^ / $ with a top-level '|' are not supported (group the alternatives: ^(a|b)$)");
    if (!search) return *body;
    seq whole;
    if (!anchored_start) whole.push_back(grammar::ref(any_star()));
    whole.push_back(grammar::ref(*body));
    if (!anchored_end) whole.push_back(grammar::ref(any_star()));
    return rule_of({whole});
  }

 private:
  error fail(const std::string& what) const {
    return make_error(errc::invalid_argument,
                      "regex at offset " + std::to_string(pos_) + " of \"" + std::string(p_) + "\": " + what);
  }
  uint32_t rule_of(const std::vector<seq>& alternatives) {
    if (g_.size() > max_elements) too_big_ = true;  // checked by compile()
    const uint32_t r = g_.add_rule();
    for (const auto& a : alternatives) g_.add_alternative(r, a);
    return r;
  }
  bool at_end() const { return pos_ >= p_.size(); }

  // One character's bytes as the target writes it.
  seq character_bytes(std::string_view utf8) {
    seq out;
    if (target_ == regex_target::json_string && utf8.size() == 1) {
      const char c = utf8[0];
      const char* esc = c == '"' ? "\\\"" : c == '\\' ? "\\\\" : c == '\n' ? "\\n" : c == '\r' ? "\\r" : c == '\t' ? "\\t"
                        : c == '\b' ? "\\b" : c == '\f' ? "\\f" : nullptr;
      if (esc) {
        g_.literal(esc, out);
        return out;
      }
      if (static_cast<unsigned char>(c) < 0x20) {  // JSON's \u00XX for the other control characters
        static const char hex[] = "0123456789abcdef";
        const auto u = static_cast<unsigned char>(c);
        const char text[] = {'\\', 'u', '0', '0', hex[u >> 4], hex[u & 15]};
        g_.literal(std::string_view(text, sizeof text), out);
        return out;
      }
    }
    g_.literal(utf8, out);
    return out;
  }

  // A class as a rule: its plain bytes, the escapes JSON needs, whole UTF-8 characters.
  expected<uint32_t> class_rule(const char_class& c) {
    std::vector<seq> alts;
    byte_set plain;
    for (unsigned b = 0; b < 128; ++b) {
      if (!c.ascii.has(static_cast<uint8_t>(b))) continue;
      const bool needs_escape = target_ == regex_target::json_string && (b < 0x20 || b == '"' || b == '\\');
      if (!needs_escape) {
        plain.add(static_cast<uint8_t>(b));
        continue;
      }
      const char ch = static_cast<char>(b);
      alts.push_back(character_bytes(std::string_view(&ch, 1)));
    }
    if (plain != byte_set{}) alts.push_back({g_.bytes(plain)});
    if (alts.empty() && !c.non_ascii) return fail("a class no character can match");
    const uint32_t r = rule_of(alts);
    if (c.non_ascii) g_.add_utf8_multibyte(r);
    return r;
  }

  uint32_t any_star() {  // any characters (search padding)
    char_class all = of_range(0, 127);
    all.non_ascii = true;
    return g_.at_most(grammar::ref(*class_rule(all)), -1);
  }

  static bool is_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
  static unsigned hex_value(std::string_view h) { return static_cast<unsigned>(std::stoul(std::string(h), nullptr, 16)); }
  /// \d \w \s and their negations \D \W \S.
  static std::optional<char_class> shorthand(char c) {
    char_class cls;
    switch (c | 0x20) {  // the lower-case letter
      case 'd': cls = of_range('0', '9'); break;
      case 'w':
        cls = of_range('0', '9');
        cls.add(of_range('A', 'Z'));
        cls.add(of_range('a', 'z'));
        cls.ascii.add('_');
        break;
      case 's': cls.ascii.add_all(" \t\n\r\f\v"); break;
      default: return std::nullopt;
    }
    if (c >= 'A' && c <= 'Z') cls.negate();
    return cls;
  }

  /// After a backslash: a class (\d ...) or one character's UTF-8 text.
  expected<std::pair<char_class, std::string>> escape() {
    if (at_end()) return fail("a trailing backslash");
    const char c = p_[pos_++];
    if (auto cls = shorthand(c)) return std::pair{*cls, std::string()};
    switch (c) {
      case 'n': return std::pair{char_class{}, std::string("\n")};
      case 'r': return std::pair{char_class{}, std::string("\r")};
      case 't': return std::pair{char_class{}, std::string("\t")};
      case 'f': return std::pair{char_class{}, std::string("\f")};
      case 'v': return std::pair{char_class{}, std::string("\v")};
      case 'x':
      case 'u': {
        const size_t n = c == 'x' ? 2 : 4;
        if (pos_ + n > p_.size() || !std::all_of(p_.begin() + static_cast<std::ptrdiff_t>(pos_),
                                                 p_.begin() + static_cast<std::ptrdiff_t>(pos_ + n), is_hex))
          return fail(std::string("\\") + c + " needs " + std::to_string(n) + " hex digits");
        const unsigned cp = hex_value(p_.substr(pos_, n));
        pos_ += n;
        if (cp >= 0xd800 && cp <= 0xdfff) return fail("a surrogate is not a character");
        return std::pair{char_class{}, grammar::utf8(cp)};
      }
      case 'b': case 'B': return fail("word boundaries (\\b, \\B) are not supported");
      default:
        if (c >= '0' && c <= '9') return fail("backreferences are not supported");
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return fail(std::string("unknown escape \\") + c);
        return std::pair{char_class{}, std::string(1, c)};  // escaped punctuation (or any other byte)
    }
  }

  /// One UTF-8 character of the pattern as text.
  expected<std::string> literal_char() {
    const auto lead = static_cast<uint8_t>(p_[pos_]);
    const size_t n = lead < 0x80 ? 1 : lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 0;
    if (n == 0 || pos_ + n > p_.size()) return fail("the pattern is not valid UTF-8");
    std::string s(p_.substr(pos_, n));
    pos_ += n;
    return s;
  }

  expected<uint32_t> bracket() {  // after '['
    char_class cls;
    bool negated = false;
    if (!at_end() && p_[pos_] == '^') {
      negated = true;
      ++pos_;
    }
    if (!at_end() && p_[pos_] == ']')  // ECMAScript's [] / [^] versus Python's literal ']': refused
      return fail("a ']' first in a class is ambiguous (escape it as \\])");
    for (;;) {
      if (at_end()) return fail("an unterminated class '['");
      if (p_[pos_] == ']') {
        ++pos_;
        break;
      }
      // One member: an escape (maybe a class), or a character, maybe the start of a range.
      int lo = -1;
      if (p_[pos_] == '\\') {
        ++pos_;
        auto e = escape();
        if (!e) return e.err();
        if (e->second.empty()) {
          cls.add(e->first);
          continue;
        }
        if (e->second.size() != 1) return fail("non-ASCII characters in a class are not supported");
        lo = static_cast<uint8_t>(e->second[0]);
      } else {
        if (static_cast<uint8_t>(p_[pos_]) >= 0x80) return fail("non-ASCII characters in a class are not supported");
        lo = static_cast<uint8_t>(p_[pos_++]);
      }
      if (pos_ + 1 < p_.size() && p_[pos_] == '-' && p_[pos_ + 1] != ']') {
        ++pos_;
        int hi;
        if (p_[pos_] == '\\') {
          ++pos_;
          auto e = escape();
          if (!e) return e.err();
          if (e->second.size() != 1) return fail("a range must end at one ASCII character");
          hi = static_cast<uint8_t>(e->second[0]);
        } else {
          if (static_cast<uint8_t>(p_[pos_]) >= 0x80) return fail("non-ASCII characters in a class are not supported");
          hi = static_cast<uint8_t>(p_[pos_++]);
        }
        if (hi < lo) return fail("a range out of order");
        cls.ascii.add_range(static_cast<uint8_t>(lo), static_cast<uint8_t>(hi));
      } else {
        cls.ascii.add(static_cast<uint8_t>(lo));
      }
    }
    if (negated) cls.negate();
    return class_rule(cls);
  }

  expected<uint32_t> atom(int depth) {
    const char c = p_[pos_];
    if (c == '(') {
      ++pos_;
      if (p_.substr(pos_, 2) == "?:") pos_ += 2;
      else if (!at_end() && p_[pos_] == '?') return fail("lookaround, named groups and inline flags are not supported");
      auto inner = alternation(depth + 1);
      if (!inner) return inner;
      if (at_end() || p_[pos_] != ')') return fail("an unterminated group '('");
      ++pos_;
      return inner;
    }
    if (c == '[') {
      ++pos_;
      return bracket();
    }
    if (c == '.') {
      ++pos_;
      char_class any = of_range(0, 127);
      any.ascii = byte_set{}.add_range(0, 127).remove('\n').remove('\r');
      any.non_ascii = true;
      return class_rule(any);
    }
    if (c == '\\') {
      ++pos_;
      auto e = escape();
      if (!e) return e.err();
      if (e->second.empty()) return class_rule(e->first);
      return rule_of({character_bytes(e->second)});
    }
    if (c == '^' || c == '$') return fail(std::string("'") + c + "' is supported only at the pattern's start / end");
    if (c == '*' || c == '+' || c == '?' || c == '{') return fail("a quantifier with nothing to repeat");
    auto ch = literal_char();
    if (!ch) return ch.err();
    return rule_of({character_bytes(*ch)});
  }

  /// Parses {n}, {n,}, {n,m} after '{'; false (nothing consumed) when it is not one.
  bool counts(int64_t* lo, int64_t* hi) {
    size_t q = pos_;
    auto number = [&](int64_t* out) {
      const size_t start = q;
      int64_t v = 0;
      while (q < p_.size() && p_[q] >= '0' && p_[q] <= '9' && v <= json_schema_max_bound * 10) v = v * 10 + (p_[q++] - '0');
      *out = v;
      return q > start;
    };
    if (!number(lo)) return false;
    *hi = *lo;
    if (q < p_.size() && p_[q] == ',') {
      ++q;
      if (!number(hi)) *hi = -1;
    }
    if (q >= p_.size() || p_[q] != '}') return false;
    pos_ = q + 1;
    return true;
  }

  expected<uint32_t> repeat(uint32_t item, int64_t lo, int64_t hi) {
    if (lo > json_schema_max_bound || hi > json_schema_max_bound)
      return fail("a count above " + std::to_string(json_schema_max_bound));
    if (hi >= 0 && hi < lo) return fail("a count range out of order");
    if (g_.size() + static_cast<size_t>(std::max(lo, hi)) * 4 > max_elements) return fail("the pattern's grammar is too large");
    // tail: up to (hi - lo) more, or any number more.
    const uint32_t tail = g_.at_most(grammar::ref(item), hi < 0 ? -1 : hi - lo);
    seq whole(static_cast<size_t>(lo), grammar::ref(item));
    whole.push_back(grammar::ref(tail));
    return rule_of({whole});
  }

  expected<uint32_t> sequence(int depth) {
    seq items;
    while (!at_end() && p_[pos_] != '|' && p_[pos_] != ')') {
      if (p_[pos_] == '$' && pos_ + 1 == p_.size()) break;  // the end anchor
      auto a = atom(depth);
      if (!a) return a;
      uint32_t item = *a;
      while (!at_end()) {  // quantifiers (several in a row apply in turn)
        const char q = p_[pos_];
        int64_t lo, hi;
        if (q == '*') lo = 0, hi = -1, ++pos_;
        else if (q == '+') lo = 1, hi = -1, ++pos_;
        else if (q == '?') lo = 0, hi = 1, ++pos_;
        else if (q == '{') {
          ++pos_;
          if (!counts(&lo, &hi)) {
            --pos_;
            return fail("'{' must start a count {n}, {n,} or {n,m} (escape it as \\{)");
          }
        } else {
          break;
        }
        if (!at_end() && p_[pos_] == '?') ++pos_;  // lazy: the same texts
        else if (!at_end() && p_[pos_] == '+') return fail("possessive quantifiers are not supported");
        auto r = repeat(item, lo, hi);
        if (!r) return r;
        item = *r;
      }
      items.push_back(grammar::ref(item));
    }
    return rule_of({items});
  }

  expected<uint32_t> alternation(int depth) {
    if (depth > 64) return fail("groups nested deeper than 64");
    std::vector<seq> alts;
    for (;;) {
      auto s = sequence(depth);
      if (!s) return s;
      alts.push_back({grammar::ref(*s)});
      if (at_end() || p_[pos_] != '|') break;
      if (depth == 0) top_level_alternation_ = true;
      ++pos_;
    }
    return rule_of(alts);
  }

  static constexpr size_t max_elements = 2'000'000;
  grammar& g_;
  std::string_view p_;
  regex_target target_;
  size_t pos_ = 0;
  bool too_big_ = false;
  bool top_level_alternation_ = false;
};

}  // namespace

expected<uint32_t> add_regex(grammar& g, std::string_view pattern, regex_target target, bool search) {
  regex_compiler c(g, pattern, target);
  return c.compile(search);
}

expected<std::shared_ptr<const grammar>> regex_grammar(std::string_view pattern) {
  auto g = std::make_shared<grammar>();
  auto root = add_regex(*g, pattern, regex_target::text, false);
  if (!root) return root.err();
  g->set_root(*root);
  if (g->left_recursive_rule() >= 0)
    return make_error(errc::invalid_argument, "regex \"" + std::string(pattern) +
                                                  "\": it repeats something that can match nothing (e.g. (a*)*)");
  if (grammar_recognizer(g).start_failed())
    return make_error(errc::invalid_argument, "regex \"" + std::string(pattern) + "\": its grammar nests too deep to start");
  return std::shared_ptr<const grammar>(std::move(g));
}

}  // namespace fw
