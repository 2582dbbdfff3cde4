#include "runtime/sample/sampler.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>

namespace fw {

namespace {

using candidate = sampler::candidate;

constexpr float neg_inf = -std::numeric_limits<float>::infinity();

// Higher logit first; equal logits: lower id first (makes every selection deterministic).
bool before(const candidate& a, const candidate& b) {
  return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
}

float max_logit(std::span<const candidate> c) {
  float m = neg_inf;
  for (const candidate& x : c) m = std::max(m, x.logit);
  return m;
}

// OpenAI's logit_bias: added to the listed tokens' logits. cands is indexed by token id here.
void apply_bias(const sampling_params& sp, std::vector<candidate>& cands) {
  for (size_t i = 0; i < sp.logit_bias_ids.size(); ++i) {
    const auto tok = static_cast<size_t>(sp.logit_bias_ids[i]);
    if (tok < cands.size()) cands[tok].logit += sp.logit_bias[i];
  }
}

// Repeat penalty as llama.cpp: a seen token's positive logit is divided by the penalty, a negative
// one multiplied; then frequency (per occurrence) and presence (once) penalties are subtracted.
// cands is still indexed by token id here.
void apply_penalties(const sampling_params& sp, std::span<const int32_t> history,
                     std::vector<candidate>& cands, std::vector<int32_t>& window) {
  const bool active =
      sp.repeat_penalty != 1.0f || sp.frequency_penalty != 0.0f || sp.presence_penalty != 0.0f;
  if (!active || sp.repeat_last_n == 0 || history.empty()) return;
  size_t n = history.size();
  if (sp.repeat_last_n > 0) n = std::min(n, static_cast<size_t>(sp.repeat_last_n));
  window.assign(history.end() - static_cast<std::ptrdiff_t>(n), history.end());
  std::sort(window.begin(), window.end());
  const auto n_vocab = static_cast<int32_t>(cands.size());
  for (size_t i = 0; i < window.size();) {
    size_t j = i;
    while (j < window.size() && window[j] == window[i]) ++j;
    const int32_t tok = window[i];
    const auto count = static_cast<float>(j - i);
    i = j;
    if (tok < 0 || tok >= n_vocab) continue;
    float& l = cands[static_cast<size_t>(tok)].logit;
    if (l <= 0.0f) {
      l *= sp.repeat_penalty;
    } else {
      l /= sp.repeat_penalty;
    }
    l -= count * sp.frequency_penalty + sp.presence_penalty;
  }
}

// Keeps the k highest logits, sorted.
void top_k(int32_t k, std::vector<candidate>& cands, bool& sorted) {
  if (k <= 0 || static_cast<size_t>(k) >= cands.size()) return;
  std::partial_sort(cands.begin(), cands.begin() + k, cands.end(), before);
  cands.resize(static_cast<size_t>(k));
  sorted = true;
}

// Keeps the smallest most-probable prefix whose probability (softmax of the current logits) reaches
// p. A large unsorted set is cut without sorting it (as llama.cpp does): one pass buckets the
// tokens by logit and sums each bucket's mass, which finds the bucket holding the cut; a second
// pass moves the buckets above it to the front, and only the boundary bucket is sorted.
void top_p(float p, std::vector<candidate>& cands, bool& sorted) {
  if (p >= 1.0f || cands.size() <= 1) return;
  const float m = sorted ? cands.front().logit : max_logit(cands);
  if (!std::isfinite(m)) return;  // all -inf, or +inf present: leave it to the softmax
  double total = 0.0;
  for (candidate& c : cands) total += c.p = std::exp(c.logit - m);  // p: unnormalized weight
  const double target = static_cast<double>(p) * total;

  double acc = 0.0;  // mass of cands[0, first)
  size_t first = 0;  // cands[first, last) is sorted and holds the cut
  size_t last = cands.size();
  if (!sorted && cands.size() > 1024) {
    constexpr int n_buckets = 1024;
    float lowest = m;
    for (const candidate& c : cands)
      if (c.logit > neg_inf) lowest = std::min(lowest, c.logit);
    const float scale = lowest < m ? static_cast<float>(n_buckets) / (m - lowest) : 0.0f;
    // Bucket 0 holds the highest logits; equal logits share a bucket, so buckets are ordered.
    auto bucket = [&](float logit) {
      const float x = (m - logit) * scale;
      return x < static_cast<float>(n_buckets - 1) ? static_cast<int>(x) : n_buckets - 1;
    };
    std::vector<double> mass(n_buckets, 0.0);
    for (const candidate& c : cands) mass[static_cast<size_t>(bucket(c.logit))] += c.p;
    int cut = 0;
    while (cut < n_buckets - 1 && acc + mass[static_cast<size_t>(cut)] < target)
      acc += mass[static_cast<size_t>(cut++)];
    // Whole buckets above the cut to the front, the cut bucket right after them.
    std::vector<candidate> boundary;
    size_t front = 0;
    for (const candidate& c : cands) {
      const int b = bucket(c.logit);
      if (b < cut) {
        cands[front++] = c;  // front never passes the element being read
      } else if (b == cut) {
        boundary.push_back(c);
      }
    }
    std::sort(boundary.begin(), boundary.end(), before);
    std::copy(boundary.begin(), boundary.end(), cands.begin() + static_cast<std::ptrdiff_t>(front));
    first = front;
    last = front + boundary.size();
    acc = 0.0;  // recount in order so rounding matches a sequential scan
    for (size_t i = 0; i < first; ++i) acc += cands[i].p;
  } else if (!sorted) {
    std::sort(cands.begin(), cands.end(), before);
  }
  // From here cands[first, last) is sorted and, when first == 0, so is everything kept.
  size_t keep = first;
  while (keep < last) {
    acc += cands[keep].p;
    ++keep;
    if (acc >= target) break;
  }
  cands.resize(std::max<size_t>(keep, 1));
  if (first == 0) sorted = true;  // else only the tail past the front buckets is in order
}

// Keeps tokens whose probability is at least p times the top one's: logit >= max + log(p).
void min_p(float p, std::vector<candidate>& cands, bool sorted) {
  if (p <= 0.0f || cands.size() <= 1) return;
  const float m = sorted ? cands.front().logit : max_logit(cands);
  if (!std::isfinite(m)) return;
  const float threshold = m + std::log(p);
  std::erase_if(cands, [threshold](const candidate& c) { return c.logit < threshold; });
}

// Fills p with the softmax of the logits (the max logit is always kept, so the sum is > 0).
void softmax(std::vector<candidate>& cands) {
  const float m = max_logit(cands);
  if (std::isinf(m)) {  // all -inf (uniform) or some +inf (uniform over those)
    const bool all_neg_inf = m < 0.0f;
    size_t n = 0;
    for (candidate& c : cands) n += (all_neg_inf || c.logit == m) ? 1 : 0;
    for (candidate& c : cands)
      c.p = (all_neg_inf || c.logit == m) ? 1.0f / static_cast<float>(n) : 0.0f;
    return;
  }
  double sum = 0.0;
  for (candidate& c : cands) {
    c.p = std::exp(c.logit - m);
    sum += c.p;
  }
  const auto inv = static_cast<float>(1.0 / sum);
  for (candidate& c : cands) c.p *= inv;
}

}  // namespace

sampler::sampler(const sampling_params& params, int32_t n_vocab)
    : params_(params), n_vocab_(n_vocab) {
  assert(params.validate().has_value());
  assert(n_vocab > 0);
  reset(params.seed);
}

expected<sampler> sampler::make(const sampling_params& params, int32_t n_vocab) {
  if (auto ok = params.validate(); !ok) return ok.err();
  if (n_vocab <= 0)
    return make_error(errc::invalid_argument,
                      "sampler needs a vocabulary of at least one token, got n_vocab = " +
                          std::to_string(n_vocab));
  if (auto ok = params.validate_token_ids(static_cast<uint32_t>(n_vocab)); !ok) return ok.err();
  return sampler(params, n_vocab);
}

void sampler::run_chain(const sampling_params& sp, std::span<const int32_t> banned,
                        std::span<const float> logits, std::span<const int32_t> history,
                        std::vector<candidate>& out, std::vector<int32_t>& window) {
  // Penalties and biases change logits by token id: they need the whole list below.
  const bool penalties = sp.repeat_penalty != 1.0f || sp.frequency_penalty != 0.0f || sp.presence_penalty != 0.0f ||
                         !sp.logit_bias_ids.empty() || !banned.empty();
  if (sp.temperature <= 0.0f && !penalties && !logits.empty()) {
    // Greedy without penalties: the argmax straight from the logits (no candidate list; a
    // batched decode step samples every row). Same result as the chain below: NaN counts as
    // -inf and the lowest id wins ties.
    size_t best = 0;
    float best_logit = std::isnan(logits[0]) ? neg_inf : logits[0];
    for (size_t i = 1; i < logits.size(); ++i)
      if (logits[i] > best_logit) best = i, best_logit = logits[i];
    out.assign(1, candidate{static_cast<int32_t>(best), best_logit, 1.0f});
    return;
  }
  bool sorted = false;
  if (!penalties && sp.top_k > 0 && static_cast<size_t>(sp.top_k) < logits.size()) {
    // top-k straight from the logits: one pass keeps the k best in a heap whose top is the worst
    // kept, so almost every token costs one comparison with it (no list of the whole vocabulary
    // to fill and partially sort: a batched step samples every row, a verified one every drafted
    // row). The same k candidates in the same order as top_k() below: `before` is a total order.
    const size_t k = static_cast<size_t>(sp.top_k);
    out.clear();
    out.reserve(k);
    for (size_t i = 0; i < k; ++i)
      out.push_back(candidate{static_cast<int32_t>(i), std::isnan(logits[i]) ? neg_inf : logits[i], 0.0f});
    std::make_heap(out.begin(), out.end(), before);
    // Every token kept so far has a lower id than token i, so i gets in only with a strictly
    // higher logit than the worst kept (NaN, which counts as -inf, never does).
    float worst = out.front().logit;
    const float* l = logits.data();
    for (size_t i = k; i < logits.size(); ++i) {
      if (!(l[i] > worst)) continue;
      std::pop_heap(out.begin(), out.end(), before);
      out.back() = candidate{static_cast<int32_t>(i), l[i], 0.0f};
      std::push_heap(out.begin(), out.end(), before);
      worst = out.front().logit;
    }
    std::sort_heap(out.begin(), out.end(), before);
    sorted = true;
  } else {
    out.resize(logits.size());
    for (size_t i = 0; i < logits.size(); ++i) {
      const float l = logits[i];
      out[i] = candidate{static_cast<int32_t>(i), std::isnan(l) ? neg_inf : l, 0.0f};
    }
  }
  if (out.empty()) return;
  apply_bias(sp, out);
  for (int32_t tok : banned)
    if (tok >= 0 && static_cast<size_t>(tok) < out.size()) out[static_cast<size_t>(tok)].logit = neg_inf;
  apply_penalties(sp, history, out, window);

  if (sp.temperature <= 0.0f) {  // greedy: strict > keeps the lowest id among equal logits
    size_t best = 0;
    for (size_t i = 1; i < out.size(); ++i)
      if (out[i].logit > out[best].logit) best = i;
    out[0] = out[best];
    out[0].p = 1.0f;
    out.resize(1);
    return;
  }

  if (!sorted) top_k(sp.top_k, out, sorted);
  top_p(sp.top_p, out, sorted);
  min_p(sp.min_p, out, sorted);
  for (candidate& c : out) c.logit /= sp.temperature;
  softmax(out);
}

int32_t sampler::sample(std::span<const float> logits, std::span<const int32_t> history) {
  assert(logits.size() == static_cast<size_t>(n_vocab_));
  run_chain(params_, banned_, logits, history, cands_, window_);
  if (cands_.empty()) return -1;
  if (cands_.size() == 1) return cands_.front().id;
  const double u = uniform();
  double cum = 0.0;
  for (const candidate& c : cands_) {
    cum += c.p;
    if (u < cum) return c.id;
  }
  // Rounding left u past the sum: take the last token with any probability.
  for (auto it = cands_.rbegin(); it != cands_.rend(); ++it)
    if (it->p > 0.0f) return it->id;
  return cands_.front().id;
}

std::vector<float> sampler::probabilities(std::span<const float> logits,
                                          std::span<const int32_t> history) const {
  std::vector<candidate> cands;
  std::vector<int32_t> window;
  run_chain(params_, banned_, logits, history, cands, window);
  std::vector<float> probs(logits.size(), 0.0f);
  for (const candidate& c : cands) probs[static_cast<size_t>(c.id)] = c.p;
  return probs;
}

std::vector<std::pair<int32_t, float>> sampler::candidates_probs(
    std::span<const float> logits, std::span<const int32_t> history) const {
  std::vector<candidate> cands;
  std::vector<int32_t> window;
  run_chain(params_, banned_, logits, history, cands, window);
  std::sort(cands.begin(), cands.end(), [](const candidate& a, const candidate& b) {
    return a.p > b.p || (a.p == b.p && a.id < b.id);
  });
  std::vector<std::pair<int32_t, float>> out;
  out.reserve(cands.size());
  for (const candidate& c : cands) out.emplace_back(c.id, c.p);
  return out;
}

int32_t sampler::draw(std::span<const float> weights) {
  double total = 0.0;
  for (float w : weights) total += w > 0.0f ? w : 0.0f;
  if (!(total > 0.0)) return -1;
  const double u = uniform() * total;
  double cum = 0.0;
  int32_t last = -1;
  for (size_t i = 0; i < weights.size(); ++i) {
    if (!(weights[i] > 0.0f)) continue;
    cum += weights[i];
    last = static_cast<int32_t>(i);
    if (u < cum) return last;
  }
  return last;
}

double sampler::uniform() {
  return static_cast<double>(rng_() >> 11) * 0x1.0p-53;  // same on every standard library
}

void sampler::reset(uint64_t seed) {
  if (seed == 0) {
    std::random_device rd;
    seed = (static_cast<uint64_t>(rd()) << 32) ^ rd();
    if (seed == 0) seed = 0x9e3779b97f4a7c15ull;
  }
  seed_ = seed;
  rng_.seed(seed);
}

}  // namespace fw
