// Tests of fw::metrics_registry: counter/gauge/histogram semantics, the exact Prometheus text
// exposition output (HELP/TYPE lines, label escaping, cumulative buckets, +Inf, _sum/_count,
// number formatting), name checks, concurrent updates, and - when promtool is installed - that
// `promtool check metrics` parses what render() produces.
#include "runtime/metrics/metrics_registry.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

namespace fw {
namespace {

TEST(metrics_registry_test, empty_registry_renders_nothing) {
  metrics_registry r;
  EXPECT_EQ(r.render(), "");
}

TEST(metrics_registry_test, counter_text_format) {
  metrics_registry r;
  auto& c = r.counter("flywheel:prompt_tokens_total", "Number of prefill tokens processed.");
  c.inc(12);
  c.inc();
  c.inc(-5);  // ignored: counters never go down
  EXPECT_DOUBLE_EQ(c.value(), 13.0);
  EXPECT_EQ(r.render(),
            "# HELP flywheel:prompt_tokens_total Number of prefill tokens processed.\n"
            "# TYPE flywheel:prompt_tokens_total counter\n"
            "flywheel:prompt_tokens_total 13\n");
}

TEST(metrics_registry_test, counter_advance_to_is_monotonic) {
  metrics_registry r;
  auto& c = r.counter("x_total", "x");
  c.advance_to(5);
  c.advance_to(3);
  EXPECT_DOUBLE_EQ(c.value(), 5.0);
  c.inc(0.5);
  EXPECT_DOUBLE_EQ(c.value(), 5.5);
}

TEST(metrics_registry_test, labelled_children_in_creation_order) {
  metrics_registry r;
  r.counter("flywheel:request_success_total", "Count of successfully processed requests.",
            {{"model_name", "m"}, {"finished_reason", "stop"}})
      .inc(2);
  r.counter("flywheel:request_success_total", "Count of successfully processed requests.",
            {{"model_name", "m"}, {"finished_reason", "length"}})
      .inc();
  // The same labels find the same child.
  r.counter("flywheel:request_success_total", "Count of successfully processed requests.",
            {{"model_name", "m"}, {"finished_reason", "stop"}})
      .inc();
  EXPECT_EQ(r.render(),
            "# HELP flywheel:request_success_total Count of successfully processed requests.\n"
            "# TYPE flywheel:request_success_total counter\n"
            "flywheel:request_success_total{model_name=\"m\",finished_reason=\"stop\"} 3\n"
            "flywheel:request_success_total{model_name=\"m\",finished_reason=\"length\"} 1\n");
}

TEST(metrics_registry_test, gauge_text_format) {
  metrics_registry r;
  auto& g = r.gauge("flywheel:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.");
  g.set(0.25);
  g.add(0.125);
  EXPECT_DOUBLE_EQ(g.value(), 0.375);
  auto& w = r.gauge("flywheel:num_requests_waiting", "Number of requests waiting to be processed.");
  w.set(3);
  w.add(-4);
  EXPECT_EQ(r.render(),
            "# HELP flywheel:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.\n"
            "# TYPE flywheel:kv_cache_usage_perc gauge\n"
            "flywheel:kv_cache_usage_perc 0.375\n"
            "# HELP flywheel:num_requests_waiting Number of requests waiting to be processed.\n"
            "# TYPE flywheel:num_requests_waiting gauge\n"
            "flywheel:num_requests_waiting -1\n");
}

TEST(metrics_registry_test, histogram_text_format) {
  metrics_registry r;
  auto& h = r.histogram("flywheel:time_to_first_token_seconds", "Histogram of time to first token in seconds.",
                        {0.25, 0.5, 1.0}, {{"model_name", "m"}});
  h.observe(0.125);
  h.observe(0.25);  // a bound is inclusive (le)
  h.observe(0.75);
  h.observe(2.0);
  h.observe(std::numeric_limits<double>::quiet_NaN());  // ignored
  const auto s = h.read();
  EXPECT_EQ(s.count, 4u);
  EXPECT_EQ(s.cumulative, (std::vector<uint64_t>{2, 2, 3}));
  EXPECT_DOUBLE_EQ(s.sum, 3.125);
  EXPECT_EQ(r.render(),
            "# HELP flywheel:time_to_first_token_seconds Histogram of time to first token in seconds.\n"
            "# TYPE flywheel:time_to_first_token_seconds histogram\n"
            "flywheel:time_to_first_token_seconds_bucket{model_name=\"m\",le=\"0.25\"} 2\n"
            "flywheel:time_to_first_token_seconds_bucket{model_name=\"m\",le=\"0.5\"} 2\n"
            "flywheel:time_to_first_token_seconds_bucket{model_name=\"m\",le=\"1\"} 3\n"
            "flywheel:time_to_first_token_seconds_bucket{model_name=\"m\",le=\"+Inf\"} 4\n"
            "flywheel:time_to_first_token_seconds_sum{model_name=\"m\"} 3.125\n"
            "flywheel:time_to_first_token_seconds_count{model_name=\"m\"} 4\n");
}

TEST(metrics_registry_test, unlabelled_histogram_has_only_le) {
  metrics_registry r;
  r.histogram("h_seconds", "h", {1.0}).observe(3);
  EXPECT_EQ(r.render(),
            "# HELP h_seconds h\n"
            "# TYPE h_seconds histogram\n"
            "h_seconds_bucket{le=\"1\"} 0\n"
            "h_seconds_bucket{le=\"+Inf\"} 1\n"
            "h_seconds_sum 3\n"
            "h_seconds_count 1\n");
}

TEST(metrics_registry_test, escaping_of_help_and_label_values) {
  metrics_registry r;
  r.gauge("g", "a \\ back\nslash \"quoted\"", {{"path", "C:\\dir\n\"x\""}}).set(1);
  EXPECT_EQ(r.render(),
            "# HELP g a \\\\ back\\nslash \"quoted\"\n"
            "# TYPE g gauge\n"
            "g{path=\"C:\\\\dir\\n\\\"x\\\"\"} 1\n");
}

TEST(metrics_registry_test, number_formatting) {
  EXPECT_EQ(metrics_registry::format_value(0), "0");
  EXPECT_EQ(metrics_registry::format_value(2), "2");
  EXPECT_EQ(metrics_registry::format_value(0.005), "0.005");
  EXPECT_EQ(metrics_registry::format_value(123456789), "123456789");
  EXPECT_EQ(metrics_registry::format_value(1e-6), "1e-06");
  EXPECT_EQ(metrics_registry::format_value(-1.5), "-1.5");
  EXPECT_EQ(metrics_registry::format_value(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(metrics_registry::format_value(-std::numeric_limits<double>::infinity()), "-Inf");
  EXPECT_EQ(metrics_registry::format_value(std::numeric_limits<double>::quiet_NaN()), "NaN");
}

TEST(metrics_registry_test, name_checks) {
  EXPECT_TRUE(metrics_registry::valid_metric_name("flywheel:time_to_first_token_seconds"));
  EXPECT_TRUE(metrics_registry::valid_metric_name("_x1"));
  EXPECT_FALSE(metrics_registry::valid_metric_name(""));
  EXPECT_FALSE(metrics_registry::valid_metric_name("1x"));
  EXPECT_FALSE(metrics_registry::valid_metric_name("a-b"));
  EXPECT_TRUE(metrics_registry::valid_label_name("model_name"));
  EXPECT_FALSE(metrics_registry::valid_label_name("a:b"));
  EXPECT_FALSE(metrics_registry::valid_label_name("le"));
  EXPECT_FALSE(metrics_registry::valid_label_name("__reserved"));
}

#ifdef NDEBUG
// Release builds: a broken contract returns a detached metric that is never rendered.
TEST(metrics_registry_test, broken_contract_gives_detached_metric) {
  metrics_registry r;
  r.counter("x_total", "x").inc();
  r.gauge("x_total", "x").set(7);               // another type
  r.counter("x_total", "other help").inc(100);  // another help
  r.counter("bad name", "x").inc();             // invalid name
  r.counter("y_total", "y", {{"le", "1"}}).inc();  // reserved label
  r.histogram("h", "h", {2.0, 1.0}).observe(1);    // bounds not increasing
  EXPECT_EQ(r.render(),
            "# HELP x_total x\n"
            "# TYPE x_total counter\n"
            "x_total 1\n");
}
#endif

TEST(metrics_registry_test, concurrent_updates_are_not_lost) {
  metrics_registry r;
  auto& c = r.counter("c_total", "c");
  auto& h = r.histogram("h_seconds", "h", metric_buckets::inter_token_latency());
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) {
        c.inc();
        h.observe(0.004);
        // Lookups and renders race with the updates.
        if (i % 1000 == 0) {
          r.gauge("g", "g", {{"t", "x"}}).add(1);
          (void)r.render();
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_DOUBLE_EQ(c.value(), 40000.0);
  EXPECT_EQ(h.read().count, 40000u);
  EXPECT_DOUBLE_EQ(r.gauge("g", "g", {{"t", "x"}}).value(), 40.0);
}

TEST(metrics_registry_test, vllm_bucket_sets_are_increasing) {
  for (const auto* b : {&metric_buckets::time_to_first_token(), &metric_buckets::inter_token_latency(),
                        &metric_buckets::e2e_request_latency()}) {
    ASSERT_FALSE(b->empty());
    for (size_t i = 1; i < b->size(); ++i) EXPECT_LT((*b)[i - 1], (*b)[i]);
  }
}

// promtool (Debian package `prometheus`) parses the exposition and lints it. The lint that
// metric names should not contain ':' is expected: vLLM's naming uses a colon prefix.
TEST(metrics_registry_test, promtool_accepts_the_output) {
  if (std::system("command -v promtool >/dev/null 2>&1") != 0) {
    // scripts/setup.sh installs it (scripts/versions.sh): in CI a missing promtool is a setup bug.
    if (std::getenv("CI")) FAIL() << "promtool not installed: scripts/setup.sh should have installed prometheus";
    GTEST_SKIP() << "promtool not installed (scripts/setup.sh installs it: apt-get install prometheus)";
  }
  metrics_registry r;
  const metric_labels l = {{"model_name", "SmolLM2 \"135M\""}};
  r.histogram(series::time_to_first_token, l)
      .observe(0.05);
  r.counter(series::generation_tokens, l).inc(10);
  r.gauge(series::num_requests_running, l).set(1);
  const auto dir = std::filesystem::temp_directory_path() / ("fw_promtool_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto in = dir / "metrics.txt", out = dir / "promtool.txt";
  std::ofstream(in) << r.render();
  const std::string cmd = "promtool check metrics < " + in.string() + " > " + out.string() + " 2>&1";
  const int rc = std::system(cmd.c_str());
  std::ifstream f(out);
  std::string line, problems;
  while (std::getline(f, line)) {
    if (line.find("should not contain ':'") != std::string::npos || line.find("colon") != std::string::npos) continue;
    problems += line + "\n";
  }
  std::filesystem::remove_all(dir);
  EXPECT_TRUE(rc == 0 || problems.empty()) << "promtool check metrics:\n" << problems;
  EXPECT_EQ(problems.find("error"), std::string::npos) << problems;
}

}  // namespace
}  // namespace fw
