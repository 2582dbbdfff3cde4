#include "runtime/sample/grammar.hpp"

#include <algorithm>
#include <cstdint>

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
  // Rules that can match the empty string, by a worklist (linear in the grammar's size): an
  // alternative is nullable once each of its elements is a nullable rule; it waits on a count of
  // the rule elements not yet known nullable (an alternative with a byte never becomes one).
  std::vector<uint8_t> nullable(n, 0);
  std::vector<uint32_t> waiting;                             // per alternative: rule elements not yet nullable
  std::vector<uint32_t> owner;                               // per alternative: its rule
  std::vector<std::vector<uint32_t>> used_in(n);             // rule -> alternatives holding it (per occurrence)
  std::vector<uint32_t> ready;
  for (size_t r = 0; r < n; ++r)
    for (uint32_t p : alternatives_[r]) {
      const auto alt = static_cast<uint32_t>(waiting.size());
      uint32_t count = 0;
      bool has_bytes = false;
      for (; elements_[p].k != element::kind::end; ++p) {
        if (elements_[p].k == element::kind::bytes) {
          has_bytes = true;
          continue;
        }
        ++count;
        used_in[elements_[p].index].push_back(alt);
      }
      waiting.push_back(has_bytes ? UINT32_MAX : count);
      owner.push_back(static_cast<uint32_t>(r));
      if (count == 0 && !has_bytes && !nullable[r]) {
        nullable[r] = 1;
        ready.push_back(static_cast<uint32_t>(r));
      }
    }
  while (!ready.empty()) {
    const uint32_t s = ready.back();
    ready.pop_back();
    for (uint32_t alt : used_in[s]) {
      if (waiting[alt] == UINT32_MAX || waiting[alt] == 0) continue;
      if (--waiting[alt] == 0 && !nullable[owner[alt]]) {
        nullable[owner[alt]] = 1;
        ready.push_back(owner[alt]);
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

namespace {

size_t utf8_encode(uint32_t cp, uint8_t out[4]) {
  if (cp < 0x80) {
    out[0] = static_cast<uint8_t>(cp);
    return 1;
  }
  if (cp < 0x800) {
    out[0] = static_cast<uint8_t>(0xc0 | (cp >> 6));
    out[1] = static_cast<uint8_t>(0x80 | (cp & 0x3f));
    return 2;
  }
  if (cp < 0x10000) {
    out[0] = static_cast<uint8_t>(0xe0 | (cp >> 12));
    out[1] = static_cast<uint8_t>(0x80 | ((cp >> 6) & 0x3f));
    out[2] = static_cast<uint8_t>(0x80 | (cp & 0x3f));
    return 3;
  }
  out[0] = static_cast<uint8_t>(0xf0 | (cp >> 18));
  out[1] = static_cast<uint8_t>(0x80 | ((cp >> 12) & 0x3f));
  out[2] = static_cast<uint8_t>(0x80 | ((cp >> 6) & 0x3f));
  out[3] = static_cast<uint8_t>(0x80 | (cp & 0x3f));
  return 4;
}

}  // namespace

std::string grammar::utf8(uint32_t cp) {
  uint8_t b[4];
  const size_t n = utf8_encode(cp, b);
  return std::string(reinterpret_cast<const char*>(b), n);
}

void grammar::character(uint32_t cp, std::vector<element>& out) { literal(utf8(cp), out); }

void grammar::add_codepoints(uint32_t rule, uint32_t lo, uint32_t hi) {
  hi = std::min<uint32_t>(hi, 0x10ffff);
  if (lo > hi) return;
  // Whole encoding lengths and no surrogates first.
  for (const uint32_t edge : {0x7fu, 0x7ffu, 0xd7ffu, 0xdfffu, 0xffffu}) {
    if (lo <= edge && hi > edge) {
      add_codepoints(rule, lo, edge);
      add_codepoints(rule, edge + 1, hi);
      return;
    }
  }
  if (lo >= 0xd800 && hi <= 0xdfff) return;
  // Split until, at every continuation byte, the range either keeps one prefix or covers all of
  // the lower bytes: then each byte position is one byte range.
  for (uint32_t i = 1; i < 4; ++i) {
    const uint32_t low = (uint32_t{1} << (6 * i)) - 1;
    if ((lo & ~low) == (hi & ~low)) continue;
    if ((lo & low) != 0) {
      add_codepoints(rule, lo, lo | low);
      add_codepoints(rule, (lo | low) + 1, hi);
      return;
    }
    if ((hi & low) != low) {
      add_codepoints(rule, lo, (hi & ~low) - 1);
      add_codepoints(rule, hi & ~low, hi);
      return;
    }
  }
  uint8_t a[4], b[4];
  const size_t n = utf8_encode(lo, a);
  utf8_encode(hi, b);
  std::vector<element> seq;
  for (size_t k = 0; k < n; ++k) seq.push_back(bytes(byte_set{}.add_range(a[k], b[k])));
  add_alternative(rule, seq);
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
