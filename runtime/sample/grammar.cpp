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

void grammar::literal(std::string_view text, std::vector<element>& out) {
  for (char c : text) out.push_back(byte(c));
}

}  // namespace fw
