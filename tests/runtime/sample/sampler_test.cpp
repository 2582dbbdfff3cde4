#include "runtime/sample/sampler.hpp"
#include "tests/support/sampling_presets.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

namespace fw {
namespace {

std::vector<float> random_logits(size_t n, uint32_t seed, float scale = 3.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> logits(n);
  for (float& l : logits) l = dist(rng);
  return logits;
}

sampling_params plain(float temperature) {  // no filters: pure softmax at temperature
  sampling_params p = test::unfiltered(temperature);
  p.seed = 1234;
  return p;
}

std::vector<double> softmax(const std::vector<float>& logits, float temperature) {
  const float m = *std::max_element(logits.begin(), logits.end());
  std::vector<double> p(logits.size());
  double sum = 0.0;
  for (size_t i = 0; i < logits.size(); ++i) sum += p[i] = std::exp((logits[i] - m) / temperature);
  for (double& x : p) x /= sum;
  return p;
}

// Straightforward reference of the chain (full sort, no penalties) to check the optimized one.
std::vector<double> reference_probs(const sampling_params& sp, const std::vector<float>& logits) {
  std::vector<int32_t> ids(logits.size());
  std::iota(ids.begin(), ids.end(), 0);
  std::sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  });
  if (sp.top_k > 0 && static_cast<size_t>(sp.top_k) < ids.size()) ids.resize(sp.top_k);
  if (sp.top_p < 1.0f) {
    double total = 0.0;
    for (int32_t id : ids) total += std::exp(static_cast<double>(logits[id] - logits[ids[0]]));
    double cum = 0.0;
    size_t keep = 0;
    while (keep < ids.size()) {
      cum += std::exp(static_cast<double>(logits[ids[keep]] - logits[ids[0]])) / total;
      ++keep;
      if (cum >= sp.top_p) break;
    }
    ids.resize(std::max<size_t>(keep, 1));
  }
  if (sp.min_p > 0.0f) {
    const float threshold = logits[ids[0]] + std::log(sp.min_p);
    std::erase_if(ids, [&](int32_t id) { return logits[id] < threshold; });
  }
  std::vector<double> out(logits.size(), 0.0);
  double sum = 0.0;
  for (int32_t id : ids) sum += out[id] = std::exp((logits[id] - logits[ids[0]]) / sp.temperature);
  for (double& x : out) x /= sum;
  return out;
}

TEST(sampler_test, greedy_is_argmax) {
  for (float temperature : {0.0f, -1.0f}) {
    sampling_params p;
    p.temperature = temperature;
    sampler s(p, 1000);
    for (uint32_t seed = 0; seed < 20; ++seed) {
      const auto logits = random_logits(1000, seed);
      const auto best = std::max_element(logits.begin(), logits.end()) - logits.begin();
      EXPECT_EQ(s.sample(logits, {}), best);
      const auto probs = s.probabilities(logits, {});
      EXPECT_EQ(probs[best], 1.0f);
      EXPECT_EQ(std::accumulate(probs.begin(), probs.end(), 0.0), 1.0);
    }
  }
}

TEST(sampler_test, greedy_ties_go_to_lowest_id) {
  sampling_params p;
  p.temperature = 0.0f;
  sampler s(p, 6);
  const std::vector<float> logits = {1.0f, 3.0f, 2.0f, 3.0f, 3.0f, 0.0f};
  EXPECT_EQ(s.sample(logits, {}), 1);
}

TEST(sampler_test, top_k_one_equals_greedy_at_any_temperature) {
  for (float temperature : {0.01f, 0.5f, 1.0f, 2.0f, 100.0f}) {
    sampling_params p;
    p.temperature = temperature;
    p.top_k = 1;
    p.seed = 7;
    sampler s(p, 500);
    for (uint32_t seed = 0; seed < 20; ++seed) {
      const auto logits = random_logits(500, seed);
      const auto best = std::max_element(logits.begin(), logits.end()) - logits.begin();
      EXPECT_EQ(s.sample(logits, {}), best) << "temperature " << temperature;
    }
  }
  sampling_params p;
  p.temperature = 5.0f;
  p.top_k = 1;
  sampler s(p, 4);
  EXPECT_EQ(s.sample(std::vector<float>{0.0f, 2.0f, 2.0f, 1.0f}, {}), 1);  // tie: lowest id
}

std::vector<int32_t> run(uint64_t seed, int n) {
  sampling_params p = plain(1.5f);
  p.seed = seed;
  sampler s(p, 256);
  std::vector<int32_t> out;
  for (int i = 0; i < n; ++i) out.push_back(s.sample(random_logits(256, i, 1.0f), out));
  return out;
}

TEST(sampler_test, same_seed_same_sequence_different_seed_differs) {
  EXPECT_EQ(run(42, 200), run(42, 200));
  EXPECT_NE(run(42, 200), run(43, 200));

  sampling_params p = plain(1.0f);
  p.seed = 99;
  sampler s(p, 256);
  const auto logits = random_logits(256, 5, 1.0f);
  std::vector<int32_t> first, second;
  for (int i = 0; i < 50; ++i) first.push_back(s.sample(logits, {}));
  s.reset(99);
  for (int i = 0; i < 50; ++i) second.push_back(s.sample(logits, {}));
  EXPECT_EQ(first, second);
  EXPECT_EQ(s.seed(), 99u);
}

TEST(sampler_test, seed_zero_draws_a_random_seed) {
  sampling_params p = plain(1.0f);
  p.seed = 0;
  sampler a(p, 16), b(p, 16);
  EXPECT_NE(a.seed(), 0u);
  EXPECT_NE(a.seed(), b.seed());
}

TEST(sampler_test, frequencies_match_softmax) {
  const std::vector<float> logits = {1.0f, 2.0f, 0.5f, -1.0f, 1.5f, 0.0f, 2.2f, -3.0f};
  for (float temperature : {1.0f, 0.7f, 2.0f}) {
    sampler s(plain(temperature), static_cast<int32_t>(logits.size()));
    const int draws = 20000;
    std::vector<int> counts(logits.size(), 0);
    for (int i = 0; i < draws; ++i) ++counts[s.sample(logits, {})];
    const auto expect = softmax(logits, temperature);
    const auto probs = s.probabilities(logits, {});
    for (size_t i = 0; i < logits.size(); ++i) {
      EXPECT_NEAR(probs[i], expect[i], 1e-6);
      const double sigma = std::sqrt(expect[i] * (1.0 - expect[i]) / draws);
      EXPECT_NEAR(static_cast<double>(counts[i]) / draws, expect[i], 5.0 * sigma + 1e-4)
          << "token " << i << " temperature " << temperature;
    }
  }
}

TEST(sampler_test, top_p_excludes_the_tail) {
  // Probabilities 0.5, 0.3, 0.15, 0.05.
  const std::vector<float> logits = {std::log(0.5f), std::log(0.3f), std::log(0.15f),
                                     std::log(0.05f)};
  sampling_params p = plain(1.0f);
  p.top_p = 0.75f;  // 0.5 is not enough, 0.5 + 0.3 is
  sampler s(p, 4);
  auto probs = s.probabilities(logits, {});
  EXPECT_NEAR(probs[0], 0.5 / 0.8, 1e-5);
  EXPECT_NEAR(probs[1], 0.3 / 0.8, 1e-5);
  EXPECT_EQ(probs[2], 0.0f);
  EXPECT_EQ(probs[3], 0.0f);
  for (int i = 0; i < 2000; ++i) EXPECT_LT(s.sample(logits, {}), 2);

  p.top_p = 0.85f;  // needs the third token too
  probs = sampler(p, 4).probabilities(logits, {});
  EXPECT_GT(probs[2], 0.0f);
  EXPECT_EQ(probs[3], 0.0f);

  p.top_p = 0.0f;  // keeps the top token only
  probs = sampler(p, 4).probabilities(logits, {});
  EXPECT_EQ(probs[0], 1.0f);
}

TEST(sampler_test, min_p_excludes_unlikely_tokens) {
  const std::vector<float> logits = {std::log(0.5f), std::log(0.3f), std::log(0.15f),
                                     std::log(0.05f)};
  sampling_params p = plain(1.0f);
  p.min_p = 0.2f;  // keeps p >= 0.1
  sampler s(p, 4);
  const auto probs = s.probabilities(logits, {});
  EXPECT_GT(probs[2], 0.0f);
  EXPECT_EQ(probs[3], 0.0f);
  EXPECT_NEAR(probs[0], 0.5 / 0.95, 1e-5);
  for (int i = 0; i < 2000; ++i) EXPECT_NE(s.sample(logits, {}), 3);

  const auto cands = s.candidates_probs(logits, {});
  ASSERT_EQ(cands.size(), 3u);
  EXPECT_EQ(cands[0].first, 0);
  EXPECT_EQ(cands[1].first, 1);
  EXPECT_EQ(cands[2].first, 2);
  EXPECT_NEAR(cands[0].second + cands[1].second + cands[2].second, 1.0, 1e-6);
}

TEST(sampler_test, chain_matches_full_sort_reference_on_large_vocab) {
  const size_t n_vocab = 50000;
  struct config {
    int32_t top_k;
    float top_p, min_p, temperature;
  };
  for (const config& c : {config{40, 0.95f, 0.05f, 0.8f}, config{0, 0.95f, 0.0f, 1.0f},
                          config{0, 0.5f, 0.0f, 1.3f}, config{0, 0.999f, 0.0f, 1.0f},
                          config{0, 1.0f, 0.05f, 0.7f}, config{1000, 0.9f, 0.01f, 1.0f},
                          config{0, 1.0f, 0.0f, 1.0f}}) {
    sampling_params p;
    p.top_k = c.top_k;
    p.top_p = c.top_p;
    p.min_p = c.min_p;
    p.temperature = c.temperature;
    p.seed = 3;
    sampler s(p, static_cast<int32_t>(n_vocab));
    for (uint32_t seed = 0; seed < 4; ++seed) {
      auto logits = random_logits(n_vocab, seed, 2.0f);
      if (seed == 3) {  // many ties and some masked tokens
        for (float& l : logits) l = std::round(l * 2.0f) / 2.0f;
        for (size_t i = 0; i < n_vocab; i += 7) logits[i] = -std::numeric_limits<float>::infinity();
      }
      const auto expect = reference_probs(p, logits);
      const auto got = s.probabilities(logits, {});
      size_t nonzero_expect = 0, nonzero_got = 0;
      for (size_t i = 0; i < n_vocab; ++i) {
        nonzero_expect += expect[i] > 0.0;
        nonzero_got += got[i] > 0.0f;
        ASSERT_NEAR(got[i], expect[i], 1e-6) << "token " << i << " top_k " << c.top_k;
      }
      EXPECT_EQ(nonzero_got, nonzero_expect);
      const int32_t tok = s.sample(logits, {});
      EXPECT_GT(expect[tok], 0.0);
    }
  }
}

TEST(sampler_test, repeat_penalty_changes_the_choice) {
  sampling_params p;
  p.temperature = 0.0f;
  p.repeat_penalty = 1.5f;
  sampler s(p, 4);
  // Positive logit divided: 2.0 / 1.5 < 1.9.
  const std::vector<float> pos = {2.0f, 1.9f, 0.0f, 0.0f};
  sampling_params no_penalty;
  no_penalty.temperature = 0.0f;
  EXPECT_EQ(sampler(no_penalty, 4).sample(pos, std::vector<int32_t>{0}), 0);
  EXPECT_EQ(s.sample(pos, std::vector<int32_t>{0}), 1);
  // Negative logit multiplied: -1.0 * 1.5 < -1.2.
  const std::vector<float> neg = {-1.0f, -1.2f, -5.0f, -5.0f};
  EXPECT_EQ(s.sample(neg, {}), 0);
  EXPECT_EQ(s.sample(neg, std::vector<int32_t>{0, 0, 0}), 1);
  // Only the last repeat_last_n tokens count.
  p.repeat_last_n = 2;
  sampler windowed(p, 4);
  EXPECT_EQ(windowed.sample(pos, std::vector<int32_t>{0, 3, 3}), 0);
  EXPECT_EQ(windowed.sample(pos, std::vector<int32_t>{3, 0, 3}), 1);
  p.repeat_last_n = 0;  // disabled
  EXPECT_EQ(sampler(p, 4).sample(pos, std::vector<int32_t>{0}), 0);
  p.repeat_last_n = -1;  // whole history
  std::vector<int32_t> long_history(1000, 3);
  long_history[0] = 0;
  EXPECT_EQ(sampler(p, 4).sample(pos, long_history), 1);
  // Out-of-vocabulary history ids are ignored.
  EXPECT_EQ(s.sample(pos, std::vector<int32_t>{-1, 17}), 0);
}

TEST(sampler_test, presence_and_frequency_penalties) {
  const std::vector<float> logits = {2.0f, 1.5f, 0.0f};
  sampling_params p;
  p.temperature = 0.0f;
  p.frequency_penalty = 0.2f;
  // Token 0 seen twice: 2.0 - 0.4 = 1.6 > 1.5; three times: 1.4 < 1.5.
  EXPECT_EQ(sampler(p, 3).sample(logits, std::vector<int32_t>{0, 0}), 0);
  EXPECT_EQ(sampler(p, 3).sample(logits, std::vector<int32_t>{0, 0, 0}), 1);
  p.frequency_penalty = 0.0f;
  p.presence_penalty = 0.6f;  // once, whatever the count: 1.4 < 1.5
  EXPECT_EQ(sampler(p, 3).sample(logits, std::vector<int32_t>{0}), 1);
  const auto probs = sampler(p, 3).probabilities(logits, std::vector<int32_t>{0});
  EXPECT_EQ(probs[1], 1.0f);
}

TEST(sampler_test, logit_bias_shifts_the_listed_logits_before_every_filter) {
  const auto logits = random_logits(500, 11);
  const auto top = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
  sampling_params p = plain(0.0f);
  p.top_k = 40;  // also the path that keeps the best k straight from the logits
  // -100 on the argmax: greedy takes the second best.
  p.logit_bias_ids = {top};
  p.logit_bias = {-100.0f};
  auto rest = logits;
  rest[top] = -1e30f;
  const auto second = static_cast<int32_t>(std::max_element(rest.begin(), rest.end()) - rest.begin());
  EXPECT_EQ(sampler(p, 500).sample(logits, {}), second);
  // +100 on a weak token: chosen by greedy and by every draw at temperature 1 (top-k keeps it).
  const auto weak = static_cast<int32_t>(std::min_element(logits.begin(), logits.end()) - logits.begin());
  p.logit_bias_ids = {weak, top};
  p.logit_bias = {100.0f, -100.0f};
  EXPECT_EQ(sampler(p, 500).sample(logits, {}), weak);
  p.temperature = 1.0f;
  sampler s(p, 500);
  for (int i = 0; i < 200; ++i) ASSERT_EQ(s.sample(logits, {}), weak);
  // A small bias moves the distribution as a shifted logit would, under a penalty too.
  p.logit_bias_ids = {3, 7};
  p.logit_bias = {1.5f, -0.5f};
  p.top_k = 0;
  p.presence_penalty = 0.25f;
  auto shifted = logits;
  shifted[3] += 1.5f, shifted[7] -= 0.5f;
  shifted[9] -= 0.25f;  // token 9 is in the history
  sampling_params q = plain(1.0f);
  q.top_k = 0;
  const std::vector<int32_t> history = {9};
  const auto got = sampler(p, 500).probabilities(logits, history);
  const auto want = sampler(q, 500).probabilities(shifted, {});
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-6) << i;
  // The ids must lie in the vocabulary and the biases in -100..100.
  p.logit_bias_ids = {500};
  p.logit_bias = {1.0f};
  EXPECT_FALSE(sampler::make(p, 500));
  EXPECT_TRUE(sampler::make(p, 501));
  p.logit_bias = {100.5f};
  EXPECT_FALSE(p.validate());
  p.logit_bias = {std::nanf("")};
  EXPECT_FALSE(p.validate());
  p.logit_bias = {1.0f, 2.0f};
  EXPECT_FALSE(p.validate()) << "one bias per id";
  p = plain(1.0f);
  p.stop_token_ids = {2, 600};
  EXPECT_TRUE(p.validate());
  EXPECT_FALSE(sampler::make(p, 500));
  EXPECT_NE(p.validate_token_ids(500).err().message.find("stop_token_ids: token id 600"), std::string::npos);
}

TEST(sampler_test, banned_tokens_are_never_chosen_until_cleared) {
  const auto logits = random_logits(300, 12);
  const auto top = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
  for (int32_t top_k : {0, 40}) {
    sampling_params p = plain(0.0f);
    p.top_k = top_k;
    sampler s(p, 300);
    s.set_banned({top, 299});
    EXPECT_NE(s.sample(logits, {}), top);
    EXPECT_EQ(s.probabilities(logits, {})[static_cast<size_t>(top)], 0.0f);
    s.set_banned({});
    EXPECT_EQ(s.sample(logits, {}), top);
    p.temperature = 1.0f;
    sampler t(p, 300);
    t.set_banned({top});
    for (int i = 0; i < 300; ++i) ASSERT_NE(t.sample(logits, {}), top);
  }
}

TEST(sampler_test, invalid_params_are_errors) {
  auto expect_error = [](sampling_params p, const char* field) {
    auto ok = p.validate();
    ASSERT_FALSE(ok) << field;
    EXPECT_EQ(ok.err().code, errc::invalid_argument);
    EXPECT_NE(ok.err().message.find(field), std::string::npos) << ok.err().message;
    EXPECT_FALSE(sampler::make(p, 100)) << field;
  };
  EXPECT_TRUE(sampling_params{}.validate());
  EXPECT_TRUE(sampler::make(sampling_params{}, 100));
  sampling_params p;
  p.temperature = std::numeric_limits<float>::quiet_NaN();
  expect_error(p, "temperature");
  p = {};
  p.temperature = std::numeric_limits<float>::infinity();
  expect_error(p, "temperature");
  p = {};
  p.top_k = -1;
  expect_error(p, "top_k");
  p = {};
  p.top_p = 1.5f;
  expect_error(p, "top_p");
  p = {};
  p.top_p = -0.1f;
  expect_error(p, "top_p");
  p = {};
  p.min_p = 2.0f;
  expect_error(p, "min_p");
  p = {};
  p.repeat_penalty = 0.0f;
  expect_error(p, "repeat_penalty");
  p = {};
  p.repeat_last_n = -2;
  expect_error(p, "repeat_last_n");
  p = {};
  p.presence_penalty = std::numeric_limits<float>::infinity();
  expect_error(p, "presence_penalty");
  p = {};
  p.frequency_penalty = std::numeric_limits<float>::quiet_NaN();
  expect_error(p, "frequency_penalty");
  p = {};
  p.max_tokens = -5;
  expect_error(p, "max_tokens");
  p = {};
  p.stop = {"ok", ""};
  expect_error(p, "stop[1]");

  auto bad_vocab = sampler::make(sampling_params{}, 0);
  ASSERT_FALSE(bad_vocab);
  EXPECT_NE(bad_vocab.err().message.find("n_vocab"), std::string::npos);
}

TEST(sampler_test, nan_and_infinite_logits) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  sampler s(plain(1.0f), 4);
  const std::vector<float> with_nan = {nan, 1.0f, nan, 1.0f};
  for (int i = 0; i < 100; ++i) {
    const int32_t t = s.sample(with_nan, {});
    EXPECT_TRUE(t == 1 || t == 3);
  }
  const std::vector<float> all_neg_inf(4, -inf);
  const auto probs = s.probabilities(all_neg_inf, {});
  EXPECT_NEAR(std::accumulate(probs.begin(), probs.end(), 0.0), 1.0, 1e-6);
  EXPECT_EQ(s.sample(std::vector<float>{0.0f, inf, 1.0f, 0.0f}, {}), 1);
  // top-k picked straight from the logits (vocabulary larger than k): NaN counts as -inf there too,
  // at the start of the logits (the first k fill the heap) and after them.
  sampling_params k2 = plain(1.0f);
  k2.top_k = 2;
  k2.top_p = 1.0f;
  k2.min_p = 0.0f;
  sampler t(k2, 6);
  const std::vector<float> nan_first = {nan, nan, 0.5f, nan, 2.0f, -inf};
  const auto p = t.probabilities(nan_first, {});
  EXPECT_GT(p[2], 0.0f);
  EXPECT_GT(p[4], 0.0f);
  EXPECT_NEAR(p[2] + p[4], 1.0, 1e-6);
  const std::vector<float> few_finite = {-inf, nan, 3.0f, -inf, nan, -inf};
  EXPECT_EQ(t.sample(few_finite, {}), 2);
}

TEST(sampler_test, draw_and_uniform_for_rejection_sampling) {
  sampler s(plain(1.0f), 4);
  EXPECT_EQ(s.draw(std::vector<float>{0.0f, 0.0f, 0.0f}), -1);
  EXPECT_EQ(s.draw(std::vector<float>{0.0f, 0.0f, 0.3f, 0.0f}), 2);
  std::vector<int> counts(2, 0);
  for (int i = 0; i < 20000; ++i) ++counts[s.draw(std::vector<float>{0.25f, 0.75f})];
  EXPECT_NEAR(counts[1] / 20000.0, 0.75, 0.02);
  double sum = 0.0;
  for (int i = 0; i < 10000; ++i) {
    const double u = s.uniform();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    sum += u;
  }
  EXPECT_NEAR(sum / 10000.0, 0.5, 0.02);
}

}  // namespace
}  // namespace fw
