#include "runtime/sample/gbnf_grammar.hpp"

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "runtime/sample/grammar_recognizer.hpp"
#include "runtime/sample/json_schema.hpp"

namespace fw {
namespace {

using element = grammar::element;
using seq = std::vector<element>;

constexpr size_t max_elements = 2'000'000;
constexpr int max_depth = 64;

bool name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

class gbnf_compiler {
 public:
  explicit gbnf_compiler(std::string_view text) : t_(text) {}

  expected<std::shared_ptr<const grammar>> compile() {
    g_ = std::make_shared<grammar>();
    skip();
    if (at_end()) return fail("the grammar is empty; it needs a rule `root ::= ...`");
    while (!at_end()) {
      const size_t at = pos_;
      const std::string name = word();
      if (name.empty()) return fail("a rule name was expected");
      skip();
      if (t_.substr(pos_, 3) != "::=") return fail("'::=' was expected after the rule name " + name);
      pos_ += 3;
      rule_info& info = rules_[name];
      if (info.defined) return fail_at(at, "the rule " + name + " is defined twice");
      info.defined = true;
      if (!info.used) info.id = g_->add_rule(), info.used = true, info.first_use = at;
      const uint32_t id = info.id;
      if (auto ok = alternatives(id, 0); !ok) return ok.err();
      if (!at_end() && !rule_starts()) return fail(std::string("unexpected '") + t_[pos_] + "'");
    }
    for (const auto& [name, info] : rules_)
      if (!info.defined) return fail_at(info.first_use, "the rule " + name + " is used but not defined");
    const auto root = rules_.find("root");
    if (root == rules_.end()) return make_error(errc::invalid_argument, "grammar: no rule `root` (where the answer starts)");
    if (g_->size() > max_elements) return make_error(errc::invalid_argument, "grammar: too large (over 2M elements)");
    g_->set_root(root->second.id);
    if (const int64_t r = g_->left_recursive_rule(); r >= 0) {
      std::string which;
      for (const auto& [name, info] : rules_)
        if (info.id == static_cast<uint32_t>(r)) which = " (rule " + name + ")";
      return make_error(errc::invalid_argument,
                        "grammar: left recursion" + which +
                            ": a rule reaches itself before matching a character, or repeats something that can "
                            "match nothing; write it right-recursive or with repetition (expr ::= term (\"+\" term)*)");
    }
    if (grammar_recognizer(g_).start_failed())
      return make_error(errc::invalid_argument, "grammar: its start nests too deep to expand");
    return std::shared_ptr<const grammar>(g_);
  }

 private:
  struct rule_info {
    uint32_t id = 0;
    bool defined = false;
    bool used = false;
    size_t first_use = 0;
  };

  error fail_at(size_t at, const std::string& what) const {
    size_t line = 1, col = 1;
    for (size_t i = 0; i < at && i < t_.size(); ++i) {
      if (t_[i] == '\n') ++line, col = 1;
      else ++col;
    }
    return make_error(errc::invalid_argument,
                      "grammar at line " + std::to_string(line) + ", column " + std::to_string(col) + ": " + what);
  }
  error fail(const std::string& what) const { return fail_at(pos_, what); }
  bool at_end() const { return pos_ >= t_.size(); }

  void skip() {  // whitespace, line breaks and comments
    while (!at_end()) {
      const char c = t_[pos_];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        ++pos_;
      } else if (c == '#') {
        while (!at_end() && t_[pos_] != '\n') ++pos_;
      } else {
        break;
      }
    }
  }
  std::string word() {
    const size_t start = pos_;
    while (!at_end() && name_char(t_[pos_])) ++pos_;
    return std::string(t_.substr(start, pos_ - start));
  }
  // Whether a rule definition `name ::=` starts here (the end of the sequence before it).
  bool rule_starts() const {
    size_t q = pos_;
    while (q < t_.size() && name_char(t_[q])) ++q;
    if (q == pos_) return false;
    while (q < t_.size() && (t_[q] == ' ' || t_[q] == '\t' || t_[q] == '\n' || t_[q] == '\r')) ++q;
    return t_.substr(q, 3) == "::=";
  }
  uint32_t new_rule(const std::vector<seq>& alts) {
    const uint32_t r = g_->add_rule();
    for (const auto& a : alts) g_->add_alternative(r, a);
    return r;
  }
  uint32_t reference(const std::string& name, size_t at) {
    rule_info& info = rules_[name];
    if (!info.used) info.id = g_->add_rule(), info.used = true, info.first_use = at;
    return info.id;
  }

  // alternatives of `rule` up to ')' (nested) or the next rule / the end (depth 0).
  expected<bool> alternatives(uint32_t rule, int depth) {
    if (depth > max_depth) return fail("groups nested deeper than 64");
    for (;;) {
      auto s = sequence(depth);
      if (!s) return s.err();
      g_->add_alternative(rule, *s);
      skip();
      if (at_end() || t_[pos_] != '|') return true;
      ++pos_;
    }
  }

  // The elements of the grammar and of the sequences still being read (not yet in it).
  size_t elements() const { return g_->size() + pending_; }

  expected<seq> sequence(int depth) {
    seq items;
    for (;;) {
      skip();
      if (at_end() || t_[pos_] == '|' || t_[pos_] == ')' || (depth == 0 && rule_starts())) {
        pending_ -= items.size();  // the caller stores them in the grammar
        return items;
      }
      if (elements() > max_elements) return fail("the grammar is too large (over 2M elements)");
      const size_t at = pos_;
      auto a = atom(depth);
      if (!a) return a.err();
      seq item = std::move(*a);
      for (;;) {  // postfix repetition (several in a row apply in turn; spaces before one allowed)
        size_t q_at = pos_;
        while (q_at < t_.size() && (t_[q_at] == ' ' || t_[q_at] == '\t')) ++q_at;
        if (q_at >= t_.size()) break;
        const char q = t_[q_at];
        if (q != '*' && q != '+' && q != '?' && q != '{') break;
        pos_ = q_at;
        int64_t lo, hi;
        if (q == '*') lo = 0, hi = -1, ++pos_;
        else if (q == '+') lo = 1, hi = -1, ++pos_;
        else if (q == '?') lo = 0, hi = 1, ++pos_;
        else if (auto c = counts(&lo, &hi); !c) return c.err();
        const element one = item.size() == 1 ? item[0] : grammar::ref(new_rule({item}));
        if (elements() + static_cast<size_t>(lo) + static_cast<size_t>(std::max<int64_t>(hi - lo, 1)) * 4 >
            max_elements)
          return fail_at(at, "the grammar is too large (over 2M elements)");
        const uint32_t tail = g_->at_most(one, hi < 0 ? -1 : hi - lo);
        item.assign(static_cast<size_t>(lo), one);
        item.push_back(grammar::ref(tail));
      }
      if (elements() + item.size() > max_elements)
        return fail_at(at, "the grammar is too large (over 2M elements)");
      items.insert(items.end(), item.begin(), item.end());
      pending_ += item.size();
    }
  }

  // {m}, {m,}, {m,n} at '{'.
  expected<bool> counts(int64_t* lo, int64_t* hi) {
    ++pos_;
    auto number = [&](int64_t* out) {
      while (!at_end() && t_[pos_] == ' ') ++pos_;
      const size_t start = pos_;
      int64_t v = 0;
      while (!at_end() && t_[pos_] >= '0' && t_[pos_] <= '9' && v <= json_schema_max_bound * 10) v = v * 10 + (t_[pos_++] - '0');
      while (!at_end() && t_[pos_] == ' ') ++pos_;
      *out = v;
      return pos_ > start;
    };
    if (!number(lo)) return fail("a count {m}, {m,} or {m,n} was expected");
    *hi = *lo;
    if (!at_end() && t_[pos_] == ',') {
      ++pos_;
      if (!number(hi)) *hi = -1;
    }
    if (at_end() || t_[pos_] != '}') return fail("'}' was expected to close the count");
    ++pos_;
    if (*lo > json_schema_max_bound || *hi > json_schema_max_bound)
      return fail("a count above " + std::to_string(json_schema_max_bound));
    if (*hi >= 0 && *hi < *lo) return fail("a count range out of order");
    return true;
  }

  // One code point of the text (UTF-8), at pos_.
  expected<uint32_t> utf8_char() {
    const auto b0 = static_cast<uint8_t>(t_[pos_]);
    const size_t n = b0 < 0x80 ? 1 : (b0 & 0xe0) == 0xc0 ? 2 : (b0 & 0xf0) == 0xe0 ? 3 : (b0 & 0xf8) == 0xf0 ? 4 : 0;
    if (n == 0 || pos_ + n > t_.size()) return fail("the grammar is not valid UTF-8");
    uint32_t cp = n == 1 ? b0 : n == 2 ? (b0 & 0x1fu) : n == 3 ? (b0 & 0x0fu) : (b0 & 0x07u);
    for (size_t k = 1; k < n; ++k) {
      const auto b = static_cast<uint8_t>(t_[pos_ + k]);
      if ((b & 0xc0) != 0x80) return fail("the grammar is not valid UTF-8");
      cp = (cp << 6) | (b & 0x3fu);
    }
    static constexpr uint32_t min_of[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min_of[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return fail("the grammar is not valid UTF-8");
    pos_ += n;
    return cp;
  }

  // One character of a literal or class: an escape or a UTF-8 character.
  expected<uint32_t> character() {
    if (t_[pos_] != '\\') return utf8_char();
    ++pos_;
    if (at_end()) return fail("a trailing backslash");
    const char c = t_[pos_++];
    switch (c) {
      case 'n': return uint32_t{'\n'};
      case 'r': return uint32_t{'\r'};
      case 't': return uint32_t{'\t'};
      case '\\': case '"': case '[': case ']': case '-': case '^': case '\'': case '/': return static_cast<uint32_t>(c);
      case 'x': case 'u': case 'U': {
        const size_t n = c == 'x' ? 2 : c == 'u' ? 4 : 8;
        uint32_t cp = 0;
        for (size_t k = 0; k < n; ++k) {
          if (at_end()) return fail(std::string("\\") + c + " needs " + std::to_string(n) + " hex digits");
          const char h = t_[pos_++];
          const int v = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
          if (v < 0) return fail(std::string("\\") + c + " needs " + std::to_string(n) + " hex digits");
          cp = cp << 4 | static_cast<uint32_t>(v);
        }
        if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return fail("an escape that is not a character");
        return cp;
      }
      default: return fail(std::string("unknown escape \\") + c);
    }
  }

  expected<seq> atom(int depth) {
    const char c = t_[pos_];
    if (c == '"') {
      ++pos_;
      seq out;
      while (!at_end() && t_[pos_] != '"') {
        if (t_[pos_] == '\n') return fail("a line break inside a literal (write \\n)");
        auto cp = character();
        if (!cp) return cp.err();
        g_->character(*cp, out);
      }
      if (at_end()) return fail("an unterminated literal");
      ++pos_;
      return out;
    }
    if (c == '[') return char_class();
    if (c == '.') {
      ++pos_;
      const uint32_t r = g_->add_rule();
      g_->add_codepoints(r, 0, 0x10ffff);
      return seq{grammar::ref(r)};
    }
    if (c == '(') {
      ++pos_;
      const uint32_t r = g_->add_rule();
      if (auto ok = alternatives(r, depth + 1); !ok) return ok.err();
      if (at_end() || t_[pos_] != ')') return fail("an unterminated group '('");
      ++pos_;
      return seq{grammar::ref(r)};
    }
    if (c == '<') return fail("token references (<...>) are not supported; write the text as a literal");
    if (name_char(c)) {
      const size_t at = pos_;
      const std::string name = word();
      return seq{grammar::ref(reference(name, at))};
    }
    return fail(std::string("unexpected '") + c + "'");
  }

  expected<seq> char_class() {  // at '['
    ++pos_;
    bool negated = false;
    if (!at_end() && t_[pos_] == '^') {
      negated = true;
      ++pos_;
    }
    std::vector<std::pair<uint32_t, uint32_t>> ranges;
    while (!at_end() && t_[pos_] != ']') {
      auto lo = character();
      if (!lo) return lo.err();
      uint32_t hi = *lo;
      if (pos_ + 1 < t_.size() && t_[pos_] == '-' && t_[pos_ + 1] != ']') {
        ++pos_;
        auto h = character();
        if (!h) return h.err();
        if (*h < *lo) return fail("a range out of order");
        hi = *h;
      }
      ranges.emplace_back(*lo, hi);
    }
    if (at_end()) return fail("an unterminated class '['");
    ++pos_;
    std::sort(ranges.begin(), ranges.end());
    std::vector<std::pair<uint32_t, uint32_t>> merged;
    for (const auto& r : ranges) {
      if (!merged.empty() && r.first <= merged.back().second + 1) merged.back().second = std::max(merged.back().second, r.second);
      else merged.push_back(r);
    }
    if (negated) {
      std::vector<std::pair<uint32_t, uint32_t>> rest;
      uint32_t next = 0;
      for (const auto& r : merged) {
        if (r.first > next) rest.emplace_back(next, r.first - 1);
        next = r.second + 1;
      }
      if (next <= 0x10ffff) rest.emplace_back(next, 0x10ffff);
      merged = std::move(rest);
    }
    const uint32_t r = g_->add_rule();
    for (const auto& [lo, hi] : merged) g_->add_codepoints(r, lo, hi);
    if (g_->alternatives(r).empty()) return fail("a class no character can match");
    return seq{grammar::ref(r)};
  }

  std::string_view t_;
  size_t pos_ = 0;
  std::shared_ptr<grammar> g_;
  std::map<std::string, rule_info> rules_;
  size_t pending_ = 0;  // elements read into sequences not yet stored
};

}  // namespace

expected<std::shared_ptr<const grammar>> gbnf_grammar(std::string_view text) {
  gbnf_compiler c(text);
  return c.compile();
}

}  // namespace fw
