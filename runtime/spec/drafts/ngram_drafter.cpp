#include "runtime/spec/drafts/ngram_drafter.hpp"

#include <algorithm>

namespace fw {

namespace {
// Prior acceptance per agreeing-context length 1..16 (SmolLM2-135M greedy answers to chat and
// extraction prompts; see the header), worth 4 verdicts.
const std::vector<float> prior = {0.2f, 0.55f, 0.65f, 0.75f, 0.8f, 0.85f, 0.88f, 0.9f,
                                  0.9f, 0.9f,  0.9f,  0.9f,  0.9f, 0.9f,  0.9f,  0.92f};
constexpr float prior_weight = 4.0f;
// Agreeing context measured at most this far back (longer agreement predicts no better).
constexpr int max_context = 64;
size_t bucket(int length) { return static_cast<size_t>(std::max(1, length) - 1); }
}  // namespace

ngram_drafter::ngram_drafter(int min_match) : min_match_(std::max(1, min_match)), acceptance_(prior, prior_weight) {}

float ngram_drafter::estimate(int length) const { return acceptance_.estimate(bucket(length)); }

ngram_match longest_match(std::span<const int32_t> h, int max_length) {
  ngram_match best;
  const int64_t n = static_cast<int64_t>(h.size());
  if (n < 2) return best;
  const int32_t last = h[n - 1];
  for (int64_t e = n - 2; e >= 0; --e) {  // e: the earlier token aligned with the last one
    if (h[e] != last) continue;
    int len = 1;
    while (len < max_length && e - len >= 0 && h[e - len] == h[n - 1 - len]) ++len;
    if (len > best.length) {
      best = {len, e + 1};
      if (len == max_length) break;
    }
  }
  return best;
}

expected<draft_proposal> ngram_drafter::propose(uint64_t seq, std::span<const int32_t> history, int k) {
  draft_proposal p;
  pending_.erase(seq);
  const ngram_match m = longest_match(history, max_context);
  if (m.length < min_match_ || k <= 0) return p;
  const int64_t take = std::min<int64_t>(k, static_cast<int64_t>(history.size()) - m.from);
  p.tokens.assign(history.begin() + m.from, history.begin() + m.from + take);
  // Token i continues the same alignment: if the ones before it are accepted, its agreeing
  // context is i tokens longer.
  pending& pend = pending_[seq];
  pend = {history.size(), p.tokens, {}};
  for (int64_t i = 0; i < take; ++i) {
    pend.buckets.push_back(bucket(m.length + static_cast<int>(i)));
    p.confidence.push_back(acceptance_.estimate(pend.buckets.back()));
  }
  return p;
}

void ngram_drafter::accept(uint64_t seq, std::span<const int32_t> history) {
  auto it = pending_.find(seq);
  if (it == pending_.end()) return;
  acceptance_.record_verdicts(history, it->second.history_size, it->second.tokens, it->second.buckets);
  pending_.erase(it);
}

}  // namespace fw
