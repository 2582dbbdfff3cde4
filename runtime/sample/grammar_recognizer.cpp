#include "runtime/sample/grammar_recognizer.hpp"

#include <algorithm>
#include <span>

namespace fw {
namespace {

using element = grammar::element;

/// Expansions one byte may take before it is refused (a grammar that runs away).
constexpr int expansion_budget = 1 << 16;

std::vector<uint32_t>& scratch_stack() {
  thread_local std::vector<uint32_t> s;
  return s;
}

}  // namespace

grammar_recognizer::grammar_recognizer(std::shared_ptr<const grammar> g)
    : g_(std::move(g)), cache_(std::make_shared<cache>()) {
  std::vector<uint32_t> stack;
  int budget = expansion_budget;
  for (uint32_t start : g_->alternatives(g_->root())) {
    stack.assign(1, start);
    if (expand(stack, stacks_, &budget, 0)) can_end_ = true;
  }
  canonical(stacks_);
  start_failed_ = budget < 0;
}

size_t grammar_recognizer::flat_hash::operator()(const flat& f) const {
  uint64_t h = 1469598103934665603ull;
  for (uint32_t x : f) h = (h ^ x) * 1099511628211ull;
  return static_cast<size_t>(h);
}

uint32_t grammar_recognizer::intern(const flat& stacks, bool can_end) const {
  flat key(stacks);
  key.push_back(can_end ? 1u : 0u);  // the flag after the stacks (their lengths say where they end)
  if (auto it = cache_->ids.find(key); it != cache_->ids.end()) return it->second;
  const auto id = static_cast<uint32_t>(cache_->states.size());
  cached_state st;
  st.stacks = stacks;
  st.can_end = can_end;
  st.next.fill(unknown);
  cache_->states.push_back(std::move(st));
  cache_->ids.emplace(std::move(key), id);
  return id;
}

uint32_t grammar_recognizer::id() const {
  auto& states = cache_->states;
  if (states.size() >= cache_states) {  // full: start again (copies re-intern as they come)
    states.clear();
    cache_->ids.clear();
    ++cache_->generation;
  }
  // No comparison of the stacks per call (a step asks once per candidate token): an id of the
  // current generation was set together with the state it names.
  if (id_ != dead && gen_ == cache_->generation) return id_;
  gen_ = cache_->generation;
  return id_ = intern(stacks_, can_end_);
}

uint32_t grammar_recognizer::transition(uint32_t from, uint8_t c) const {
  const uint32_t known = cache_->states[from].next[c];
  if (known != unknown) return known;
  flat next;
  bool ok;
  const bool ran_out = step(cache_->states[from].stacks, c, next, &ok);
  const uint32_t to = (!ok || (next.empty() && !ran_out)) ? dead : intern(next, ran_out);
  cache_->states[from].next[c] = to;  // after intern: it may have moved the states
  return to;
}

bool grammar_recognizer::expand(std::vector<uint32_t>& stack, flat& to, int* budget, int depth) const {
  // The last alternative of each reference goes on in this loop; the others recurse (a level
  // per alternative within alternatives, bounded).
  if (depth > max_expansion_depth) *budget = -1;
  bool ran_out = false;
  for (;;) {
    if (--*budget < 0) return ran_out;
    if (stack.empty()) return true;
    const uint32_t p = stack.back();
    const element& e = g_->at(p);
    if (e.k == element::kind::end) {
      stack.pop_back();
      continue;
    }
    if (e.k == element::kind::bytes) {
      if (stack.size() <= max_depth) {
        to.push_back(static_cast<uint32_t>(stack.size()));
        to.insert(to.end(), stack.begin(), stack.end());
      }
      return ran_out;
    }
    // A reference: the caller goes on after it (or is done: its frame goes), the callee on top.
    stack.back() = p + 1;
    if (g_->at(p + 1).k == element::kind::end) stack.pop_back();
    const auto& alts = g_->alternatives(e.index);
    if (alts.empty()) return ran_out;
    for (size_t i = 0; i + 1 < alts.size(); ++i) {
      std::vector<uint32_t> copy(stack);
      copy.push_back(alts[i]);
      if (expand(copy, to, budget, depth + 1)) ran_out = true;
    }
    stack.push_back(alts.back());
  }
}

bool grammar_recognizer::step(const flat& from, uint8_t c, flat& to, bool* ok) const {
  to.clear();
  *ok = true;
  bool ran_out = false;
  int budget = expansion_budget;
  auto& stack = scratch_stack();
  for (size_t i = 0; i < from.size(); i += from[i] + 1) {
    const uint32_t n = from[i];
    const uint32_t top = from[i + n];
    if (!g_->set(g_->at(top).index).has(c)) continue;
    stack.assign(from.begin() + static_cast<std::ptrdiff_t>(i + 1), from.begin() + static_cast<std::ptrdiff_t>(i + 1 + n));
    stack.back() = top + 1;
    if (expand(stack, to, &budget, 0)) ran_out = true;
  }
  if (budget < 0) *ok = false;
  if (to.size() > max_stacks * 64) *ok = false;  // stack entries in all: a step's memory bound
  canonical(to);
  size_t count = 0;
  for (size_t i = 0; i < to.size(); i += to[i] + 1) ++count;
  if (count > max_stacks) *ok = false;
  return ran_out;
}

void grammar_recognizer::canonical(flat& stacks) {
  std::vector<std::span<const uint32_t>> views;
  for (size_t i = 0; i < stacks.size(); i += stacks[i] + 1) views.emplace_back(stacks.data() + i, stacks[i] + 1);
  if (views.size() < 2) return;
  auto less = [](std::span<const uint32_t> x, std::span<const uint32_t> y) {
    return std::lexicographical_compare(x.begin(), x.end(), y.begin(), y.end());
  };
  auto same = [](std::span<const uint32_t> x, std::span<const uint32_t> y) { return std::ranges::equal(x, y); };
  if (std::is_sorted(views.begin(), views.end(), less) &&
      std::adjacent_find(views.begin(), views.end(), same) == views.end())
    return;
  std::sort(views.begin(), views.end(), less);
  views.erase(std::unique(views.begin(), views.end(), same), views.end());
  flat out;
  out.reserve(stacks.size());
  for (auto v : views) out.insert(out.end(), v.begin(), v.end());
  stacks.swap(out);
}

uint32_t grammar_recognizer::walk(std::string_view bytes) const {
  uint32_t at = id();
  for (char c : bytes) {
    at = transition(at, static_cast<uint8_t>(c));
    if (at == dead) break;
  }
  return at;
}

bool grammar_recognizer::feed(char c) { return feed(std::string_view(&c, 1)); }

bool grammar_recognizer::accepts(std::string_view bytes) const { return walk(bytes) != dead; }

bool grammar_recognizer::feed(std::string_view bytes) {
  const uint32_t at = walk(bytes);
  if (at == dead) return false;
  const cached_state& st = cache_->states[at];
  stacks_ = st.stacks;
  can_end_ = st.can_end;
  id_ = at;
  return true;
}

void grammar_recognizer::next_bytes(byte_set* ok, byte_set* same) const {
  *ok = {};
  *same = {};
  const uint32_t at = id();
  for (unsigned c = 0; c < 256; ++c) {
    const uint32_t to = transition(at, static_cast<uint8_t>(c));
    if (to == dead) continue;
    ok->add(static_cast<uint8_t>(c));
    if (to == at) same->add(static_cast<uint8_t>(c));
  }
}

}  // namespace fw
