#include "runtime/sample/grammar.hpp"

#include <algorithm>

namespace fw {

uint32_t grammar::add_rule() {
  alternatives_.emplace_back();
  return static_cast<uint32_t>(alternatives_.size() - 1);
}

void grammar::add_alternative(uint32_t rule, const std::vector<element>& sequence) {
  alternatives_[rule].push_back(static_cast<uint32_t>(elements_.size()));
  elements_.insert(elements_.end(), sequence.begin(), sequence.end());
  elements_.push_back({element::kind::end, 0});
}

grammar::element grammar::bytes(const byte_set& set) {
  // Sets repeat (a quote, a digit class): the last few are looked up before adding one.
  const size_t from = sets_.size() > 64 ? sets_.size() - 64 : 0;
  for (size_t i = sets_.size(); i-- > from;)
    if (sets_[i] == set) return {element::kind::bytes, static_cast<uint32_t>(i)};
  sets_.push_back(set);
  return {element::kind::bytes, static_cast<uint32_t>(sets_.size() - 1)};
}

int64_t grammar::left_recursive_rule() const {
  const size_t n = alternatives_.size();
  // Rules that can match the empty string: a fixpoint over the alternatives.
  std::vector<uint8_t> nullable(n, 0);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < n; ++r) {
      if (nullable[r]) continue;
      for (uint32_t p : alternatives_[r]) {
        bool all = true;
        for (; elements_[p].k != element::kind::end; ++p)
          if (elements_[p].k == element::kind::bytes || !nullable[elements_[p].index]) {
            all = false;
            break;
          }
        if (all) {
          nullable[r] = 1;
          changed = true;
          break;
        }
      }
    }
  }
  // r -> s when s can come first in r (after nullable rules only); a cycle is left recursion.
  std::vector<std::vector<uint32_t>> first(n);
  for (size_t r = 0; r < n; ++r)
    for (uint32_t p : alternatives_[r])
      for (; elements_[p].k == element::kind::rule; ++p) {
        first[r].push_back(elements_[p].index);
        if (!nullable[elements_[p].index]) break;
      }
  std::vector<uint8_t> colour(n, 0);  // 0 new, 1 on the path, 2 done
  std::vector<std::pair<uint32_t, size_t>> path;
  for (size_t root = 0; root < n; ++root) {
    if (colour[root]) continue;
    path.emplace_back(static_cast<uint32_t>(root), 0);
    colour[root] = 1;
    while (!path.empty()) {
      auto& [r, next] = path.back();
      if (next == first[r].size()) {
        colour[r] = 2;
        path.pop_back();
        continue;
      }
      const uint32_t s = first[r][next++];
      if (colour[s] == 1) return s;
      if (colour[s] == 0) {
        colour[s] = 1;
        path.emplace_back(s, 0);
      }
    }
  }
  return -1;
}

void grammar::add_utf8_multibyte(uint32_t rule) {
  auto range = [&](uint8_t lo, uint8_t hi) { return bytes(byte_set{}.add_range(lo, hi)); };
  const element tail = range(0x80, 0xbf);
  add_alternative(rule, {range(0xc2, 0xdf), tail});
  add_alternative(rule, {byte('\xe0'), range(0xa0, 0xbf), tail});
  add_alternative(rule, {bytes(byte_set{}.add_range(0xe1, 0xec).add_range(0xee, 0xef)), tail, tail});
  add_alternative(rule, {byte('\xed'), range(0x80, 0x9f), tail});
  add_alternative(rule, {byte('\xf0'), range(0x90, 0xbf), tail, tail});
  add_alternative(rule, {range(0xf1, 0xf3), tail, tail, tail});
  add_alternative(rule, {byte('\xf4'), range(0x80, 0x8f), tail, tail});
}

uint32_t grammar::at_most(element e, int64_t n) {
  uint32_t r = add_rule();
  if (n < 0) {  // r ::= e r | (nothing)
    add_alternative(r, {e, ref(r)});
    add_alternative(r, {});
    return r;
  }
  add_alternative(r, {});
  for (int64_t k = 0; k < n; ++k) {
    const uint32_t more = add_rule();
    add_alternative(more, {e, ref(r)});
    add_alternative(more, {});
    r = more;
  }
  return r;
}

void grammar::literal(std::string_view text, std::vector<element>& out) {
  for (char c : text) out.push_back(byte(c));
}

}  // namespace fw
