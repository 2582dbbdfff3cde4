#include "runtime/spec/k_policy.hpp"

#include <algorithm>
#include <cmath>

namespace fw {

int k_policy::bandwidth_cap() const {
  if (c_.bandwidth_gbs <= 0) return c_.k_max;
  // About 5 at 200 GB/s and 7 at 400 GB/s: one more token per doubling, from 5 at 200.
  const int cap = static_cast<int>(std::floor(5.0 + 2.0 * std::log2(c_.bandwidth_gbs / 200.0) + 1e-9));
  return std::clamp(cap, 1, c_.k_max);
}

int k_policy::initial_k(int prompt_tokens, std::optional<float> entropy) const {
  int k = c_.fixed_k;
  if (c_.adaptive) {
    if (entropy) {
      k = *entropy > c_.entropy_threshold ? c_.k_short : c_.k_long;
    } else if (prompt_tokens < c_.short_prompt) {
      k = c_.k_short;
    } else {
      k = c_.k_long;
    }
  }
  return std::min(k, bandwidth_cap());
}

k_state k_policy::start(int prompt_tokens, std::optional<float> entropy) const {
  k_state s;
  s.k = initial_k(prompt_tokens, entropy);
  return s;
}

void k_policy::observe(k_state& s, int proposed, int accepted) const {
  if (!c_.adaptive) return;
  if (proposed <= 0) {
    if (s.k == 0 && ++s.steps_at_zero >= (s.reprobe_wait > 0 ? s.reprobe_wait : c_.reprobe_every)) {
      s.k = 1;  // probe again: the text may have become predictable
      s.steps_at_zero = 0;
      s.acceptance_ema = -1;  // judge the probe on its own results, not the old average
      s.probing = true;
    }
    return;
  }
  const double rate = static_cast<double>(accepted) / proposed;
  s.acceptance_ema = s.acceptance_ema < 0 ? rate : c_.ema_alpha * rate + (1 - c_.ema_alpha) * s.acceptance_ema;
  s.k = next_k(s);
  if (s.probing) {  // a probe that falls back to 0 doubles the wait for the next one
    s.probing = false;
    const int wait = s.reprobe_wait > 0 ? s.reprobe_wait : c_.reprobe_every;
    s.reprobe_wait = s.k == 0 ? std::min(2 * wait, c_.max_reprobe_wait) : 0;
  }
}

int k_policy::next_k(const k_state& s) const {
  if (c_.verify_cost.size() > 1)  // cost-aware: the best k for this acceptance (0: plain, re-probed)
    return std::max(c_.k_min, best_k(s.acceptance_ema, bandwidth_cap()));
  if (s.acceptance_ema < c_.lower_at) return std::max(c_.k_min, s.k - 1);
  if (s.acceptance_ema > c_.raise_at) return std::min(bandwidth_cap(), s.k + 1);
  return s.k;
}

double k_policy::step_cost(int rows) const {
  const auto& c = c_.verify_cost;
  const int n = static_cast<int>(c.size());  // measured for 1 .. n rows
  if (rows <= n) return c[static_cast<size_t>(std::max(rows, 1) - 1)];
  const int lo = (n - 1) / 2;  // the upper half's slope: the marginal row of a large step
  const double slope = n - 1 > lo ? (c[static_cast<size_t>(n - 1)] - c[static_cast<size_t>(lo)]) / (n - 1 - lo) : 1.0;
  return c[static_cast<size_t>(n - 1)] + slope * (rows - n);
}

int k_policy::best_k(double a, int max_k, int batch_rows) const {
  max_k = std::min<int>(max_k, static_cast<int>(c_.verify_cost.size()) - 1);
  const int b = std::max(batch_rows, 1);
  int best = 0;
  double best_rate = b / step_cost(b);  // plain decoding: one token per row
  double expected = 1.0, term = 1.0;
  for (int k = 1; k <= max_k; ++k) {
    term *= a;
    expected += term;  // 1 + a + ... + a^k: the target's own token plus the accepted prefix
    const double rate = (b - 1 + expected) / step_cost(b + k);
    if (rate > best_rate) best = k, best_rate = rate;
  }
  return best;
}

int k_policy::best_prefix(std::span<const float> confidence, int batch_rows) const {
  return best_prefixes(std::span<const std::span<const float>>(&confidence, 1), batch_rows).front();
}

std::vector<int> k_policy::best_prefixes(std::span<const std::span<const float>> confidences, int batch_rows) const {
  const size_t n = confidences.size();
  std::vector<int> prefix(n, 0);
  if (c_.verify_cost.size() < 2) {  // no cost measurement: every token up to the first doubtful one
    for (size_t i = 0; i < n; ++i)
      while (static_cast<size_t>(prefix[i]) < confidences[i].size() &&
             confidences[i][static_cast<size_t>(prefix[i])] >= c_.lower_at)
        ++prefix[i];
    return prefix;
  }
  // Every candidate row: (reach, proposal, position); a proposal's reaches never grow.
  struct row {
    double reach;
    size_t proposal;
    int position;
  };
  const int max_m = static_cast<int>(c_.verify_cost.size()) - 1;
  std::vector<row> cand;
  for (size_t i = 0; i < n; ++i) {
    double reach = 1.0;
    const int m = std::min<int>(max_m, static_cast<int>(confidences[i].size()));
    for (int j = 0; j < m; ++j) {
      reach *= std::clamp(static_cast<double>(confidences[i][static_cast<size_t>(j)]), 0.0, 1.0);
      cand.push_back({reach, i, j});
    }
  }
  // Likeliest first; equal reaches keep proposal and position order, so a proposal's rows stay a
  // prefix of it.
  std::stable_sort(cand.begin(), cand.end(), [](const row& a, const row& b) { return a.reach > b.reach; });
  const int b = std::max(batch_rows, 1);
  double expected = b, best_rate = b / step_cost(b);
  size_t best = 0;
  for (size_t r = 0; r < cand.size(); ++r) {
    expected += cand[r].reach;
    const double rate = expected / step_cost(b + static_cast<int>(r + 1));
    if (rate > best_rate) best = r + 1, best_rate = rate;
  }
  for (size_t r = 0; r < best; ++r) prefix[cand[r].proposal] = std::max(prefix[cand[r].proposal], cand[r].position + 1);
  return prefix;
}

int k_policy::k_for_scored(uint32_t remaining) const {
  const int k = c_.adaptive ? bandwidth_cap() : std::min(c_.fixed_k, bandwidth_cap());
  return std::max(0, std::min<int>(k, static_cast<int>(remaining) - 1));
}

int k_policy::k_for(const k_state& s, uint32_t remaining) const {
  const int k = c_.adaptive ? s.k : std::min(c_.fixed_k, bandwidth_cap());
  // A proposal longer than what may still be generated is wasted work.
  return std::max(0, std::min<int>(k, static_cast<int>(remaining) - 1));
}

}  // namespace fw
