// alert_monitor: each alert fires on fabricated readings that break its threshold within the
// window and resolves once the window holds only good readings.
#include <gtest/gtest.h>

#include <cmath>

#include "tools/server/alert_monitor.hpp"

namespace fw::server {
namespace {

histogram_metric::snapshot hist(std::vector<double> bounds, std::vector<uint64_t> cumulative) {
  histogram_metric::snapshot h;
  h.bounds = std::move(bounds);
  h.cumulative = std::move(cumulative);
  h.count = h.cumulative.empty() ? 0 : h.cumulative.back();
  return h;
}

const alert_status& find(const std::vector<alert_status>& v, const std::string& name) {
  for (const auto& a : v)
    if (a.name == name) return a;
  static alert_status none;
  ADD_FAILURE() << name << " missing";
  return none;
}

TEST(alert_monitor, quantile_interpolates_like_prometheus) {
  const auto h = hist({0.1, 0.5, 1.0}, {50, 90, 100});
  EXPECT_NEAR(alert_monitor::quantile(0.5, h), 0.1, 1e-12);
  EXPECT_NEAR(alert_monitor::quantile(0.7, h), 0.1 + 0.4 * 0.5, 1e-12);
  EXPECT_NEAR(alert_monitor::quantile(0.99, h), 0.5 + 0.5 * 0.9, 1e-12);
  EXPECT_TRUE(std::isnan(alert_monitor::quantile(0.5, hist({0.1}, {0}))));
}

TEST(alert_monitor, acceptance_fires_and_resolves_over_the_window) {
  alerts_section cfg;
  cfg.window_s = 10;
  alert_monitor m(cfg);
  alert_reading r;
  r.ttft = r.tpot = hist({1.0}, {0});
  // Too little data: not firing.
  r.now_s = 0, r.draft_tokens = 10, r.accepted_tokens = 1;
  EXPECT_FALSE(find(m.evaluate(r), "spec_acceptance_low").firing);
  r.now_s = 5, r.draft_tokens = 110, r.accepted_tokens = 41;  // 40% since start
  auto s = find(m.evaluate(r), "spec_acceptance_low");
  EXPECT_TRUE(s.firing);
  EXPECT_NEAR(s.value, 40.0 / 100.0, 1e-9);
  // Then 90% for longer than the window: the old readings leave it.
  for (int t = 6; t <= 30; ++t) {
    r.now_s = t, r.draft_tokens += 100, r.accepted_tokens += 90;
    s = find(m.evaluate(r), "spec_acceptance_low");
  }
  EXPECT_FALSE(s.firing);
  EXPECT_NEAR(s.value, 0.9, 1e-9);
}

TEST(alert_monitor, latency_p99_fires_on_slow_requests_only_while_they_are_in_the_window) {
  alerts_section cfg;
  cfg.window_s = 10;
  cfg.ttft_p99_slo_s = 2.0;
  alert_monitor m(cfg);
  alert_reading r;
  r.tpot = hist({1.0}, {0});
  r.now_s = 0;
  r.ttft = hist({0.5, 1, 2.5, 5}, {100, 100, 100, 100});  // all fast
  EXPECT_FALSE(find(m.evaluate(r), "ttft_p99_high").firing);
  r.now_s = 1;
  r.ttft = hist({0.5, 1, 2.5, 5}, {100, 100, 100, 110});  // 10 requests in (2.5, 5]
  auto s = find(m.evaluate(r), "ttft_p99_high");
  EXPECT_TRUE(s.firing);
  EXPECT_GT(s.value, 2.5);
  r.now_s = 20;
  r.ttft = hist({0.5, 1, 2.5, 5}, {200, 200, 200, 210});  // 100 fast ones since
  find(m.evaluate(r), "ttft_p99_high");
  r.now_s = 25;
  r.ttft = hist({0.5, 1, 2.5, 5}, {300, 300, 300, 310});
  s = find(m.evaluate(r), "ttft_p99_high");
  EXPECT_FALSE(s.firing);
  EXPECT_LE(s.value, 0.5);
  EXPECT_FALSE(find(m.evaluate(r), "tpot_p99_high").firing);  // no tokens: no verdict
}

TEST(alert_monitor, prefill_to_decode_mean_fires_above_the_threshold) {
  alerts_section cfg;
  cfg.window_s = 10;
  cfg.max_prefill_to_decode_s = 0.01;
  alert_monitor m(cfg);
  alert_reading r;
  r.ttft = r.tpot = hist({1.0}, {0});
  r.now_s = 0;
  r.prefill_to_decode = hist({0.01, 0.1}, {0, 0});
  EXPECT_FALSE(find(m.evaluate(r), "prefill_to_decode_high").firing);  // no hand-offs: no verdict
  r.now_s = 1;
  r.prefill_to_decode = hist({0.01, 0.1}, {0, 4});
  r.prefill_to_decode.sum = 4 * 0.05;
  auto s = find(m.evaluate(r), "prefill_to_decode_high");
  EXPECT_TRUE(s.firing);
  EXPECT_NEAR(s.value, 0.05, 1e-12);
  r.now_s = 30;
  r.prefill_to_decode = hist({0.01, 0.1}, {100, 104});
  r.prefill_to_decode.sum = 0.2 + 100 * 0.002;
  find(m.evaluate(r), "prefill_to_decode_high");
  r.now_s = 35;
  r.prefill_to_decode = hist({0.01, 0.1}, {200, 204});
  r.prefill_to_decode.sum = 0.2 + 200 * 0.002;
  s = find(m.evaluate(r), "prefill_to_decode_high");
  EXPECT_FALSE(s.firing);
  EXPECT_NEAR(s.value, 0.002, 1e-9);
}

}  // namespace
}  // namespace fw::server
