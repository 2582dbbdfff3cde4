// tools/bench/workload_file and trace_replay's summary: a workload's lines, their errors by
// file:line, the Poisson trace (file order, wrapping, seeded), recorded times, calibration text;
// and goodput / SLO attainment / per-class percentiles from fabricated outcomes.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "tools/bench/trace_replay.hpp"
#include "tools/bench/workload_file.hpp"

namespace fw::cli {
namespace {

std::string line(const std::string& cls, const std::string& text, int max_tokens = 8) {
  return nlohmann::json{{"class", cls},
                        {"messages", {{{"role", "system"}, {"content", "sys"}}, {{"role", "user"}, {"content", text}}}},
                        {"max_tokens", max_tokens}}
             .dump();
}

TEST(workload_file, lines_are_read_in_order_with_their_class_and_budget) {
  auto w = workload_file::parse(line("short", "a") + "\n\n" + line("long", "b\nc", 128) + "\n", "w.jsonl");
  ASSERT_TRUE(w) << w.err().message;
  ASSERT_EQ(w->lines.size(), 2u);
  EXPECT_EQ(w->lines[1].cls, "long");
  EXPECT_EQ(w->lines[1].max_tokens, 128);
  EXPECT_FALSE(w->timed);
  EXPECT_EQ(w->user_queries(), "a\nb c\n") << "one query per line";
  EXPECT_EQ(w->texts_of("long"), "b\nc\n\n");
}

TEST(workload_file, malformed_lines_name_the_file_line_and_the_problem) {
  const std::pair<std::string, std::string> cases[] = {
      {"not json", "w:1: not a JSON object"},
      {R"({"messages": []})", "w:1: \"messages\" must be a non-empty array"},
      {R"({"messages": [{"role": "user"}]})", "w:1: each message needs a string \"role\" and \"content\""},
      {R"({"messages": [{"role": "system", "content": "x"}]})", "w:1: no user message with text"},
      {line("short", "a", 0), "w:1: \"max_tokens\" must be an integer in [1, 65536]"},
      {line("all", "a"), "w:1: \"all\" is reserved"},
      {"", "workload w: no requests"},
  };
  for (const auto& [text, want] : cases) {
    auto w = workload_file::parse(text, "w");
    ASSERT_FALSE(w) << text;
    EXPECT_NE(w.err().message.find(want), std::string::npos) << w.err().message;
  }
  auto timed = nlohmann::json::parse(line("short", "a"));
  timed["at_s"] = 2.0;
  auto earlier = timed;
  earlier["at_s"] = 1.0;
  auto w = workload_file::parse(timed.dump() + "\n" + earlier.dump(), "w");
  ASSERT_FALSE(w);
  EXPECT_NE(w.err().message.find("w:2: \"at_s\" must be a number, not below"), std::string::npos);
  w = workload_file::parse(timed.dump() + "\n" + line("short", "b"), "w");
  ASSERT_FALSE(w);
  EXPECT_NE(w.err().message.find("on some lines but not all"), std::string::npos);
}

TEST(workload_file, the_poisson_trace_takes_lines_in_order_and_says_when_it_wraps) {
  auto w = workload_file::parse(line("short", "a") + "\n" + line("long", "b") + "\n" + line("short", "c"), "w");
  ASSERT_TRUE(w);
  bool wrapped = true;
  const auto t = w->trace(0.5, 4, 7, nullptr, &wrapped);
  const auto again = w->trace(0.5, 4, 7);
  ASSERT_EQ(t.size(), again.size()) << "seeded";
  for (size_t i = 0; i < t.size(); ++i) EXPECT_EQ(t[i].at_s, again[i].at_s);
  EXPECT_LE(t.size(), 3u);
  EXPECT_FALSE(wrapped);
  size_t next = 0;
  const auto busy = w->trace(20, 5, 7, &next, &wrapped);
  EXPECT_TRUE(wrapped);
  ASSERT_GT(busy.size(), 40u) << "about 100 arrivals";
  EXPECT_LT(busy.size(), 160u);
  for (size_t i = 0; i < busy.size(); ++i) {
    EXPECT_EQ(busy[i].cls, i % 3 == 1 ? "long" : "short");
    if (i) {
      EXPECT_GE(busy[i].at_s, busy[i - 1].at_s);
    }
    EXPECT_LT(busy[i].at_s, 5.0);
  }
  EXPECT_EQ(next, busy.size() % 3) << "where the next trace starts";
  // A second trace starts where the first stopped: no line of a short run repeats.
  size_t line = 1;
  const auto first = w->trace(0.3, 4, 9, &line);
  const auto second = w->trace(0.3, 4, 10, &line);
  ASSERT_FALSE(first.empty());
  ASSERT_FALSE(second.empty());
  EXPECT_EQ(first.front().cls, "long") << "started at line 1";
  EXPECT_EQ(second.front().messages, w->lines[(1 + first.size()) % 3].messages);
}

TEST(trace_summary, goodput_counts_requests_within_both_slos_per_second_of_the_window) {
  replay_result r;
  r.wall_s = 12;
  r.window_s = 10;
  auto add = [&](const std::string& cls, bool ok, double ttft, double e2e, uint32_t tokens) {
    request_outcome o;
    o.cls = cls;
    o.ok = ok;
    o.status = ok ? 200 : 503;
    o.ttft_ms = ttft;
    o.e2e_ms = e2e;
    o.tokens = tokens;
    r.outcomes.push_back(o);
  };
  add("short", true, 200, 200 + 9 * 20, 10);   // TPOT 20 ms: good
  add("short", true, 900, 900 + 9 * 60, 10);   // TPOT 60 ms: outside
  add("long", true, 1500, 1500 + 9 * 10, 10);  // TTFT 1.5 s: outside
  add("short", false, 0, 0, 0);                // refused
  add("short", true, 100, 100, 1);             // one token: TTFT only, good
  const auto s = summarize(r, slo{1000, 50});
  EXPECT_EQ(s["all"]["requests"], 5);
  EXPECT_EQ(s["all"]["completed"], 4);
  EXPECT_EQ(s["all"]["good"], 2);
  EXPECT_DOUBLE_EQ(s["all"]["goodput"].get<double>(), 0.2);
  EXPECT_DOUBLE_EQ(s["all"]["slo_attainment"].get<double>(), 0.4);
  EXPECT_DOUBLE_EQ(s["all"]["qps"].get<double>(), 4.0 / 12);
  EXPECT_EQ(s["all"]["errors"]["503"], 1);
  EXPECT_EQ(s["short"]["requests"], 4);
  EXPECT_EQ(s["long"]["good"], 0);
  EXPECT_DOUBLE_EQ(s["long"]["ttft_ms"]["p50"].get<double>(), 1500);
}

}  // namespace
}  // namespace fw::cli
