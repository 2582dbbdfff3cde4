// degradation_policy on fabricated traces (the same CSV format `:drill` replays): a heat ramp
// with a falling link goes healthy -> link-degraded -> co-located and back one step at a time;
// a flapping link holds link-degraded (hysteresis); a lost device falls back at once; rising
// error counters degrade; a malformed trace is refused with its line.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "runtime/supervise/degradation_policy.hpp"
#include "runtime/supervise/telemetry_trace.hpp"
#include "runtime/supervise/thermal_source.hpp"

namespace fw {
namespace {

/// Replays a trace moment by moment; returns "t:from>to" for each transition.
std::vector<std::string> replay(const std::string& csv, degradation_policy& p) {
  auto samples = parse_telemetry_trace(csv, "drill.csv");
  EXPECT_TRUE(samples) << (samples ? "" : samples.err().what());
  std::vector<std::string> out;
  if (!samples) return out;
  std::vector<telemetry_sample> moment;
  auto flush = [&] {
    if (moment.empty()) return;
    if (p.observe(moment)) {
      const auto& t = p.transitions().back();
      out.push_back(std::to_string(static_cast<int>(t.t_s)) + ":" + to_string(t.from) + ">" + to_string(t.to));
    }
    moment.clear();
  };
  for (auto& s : *samples) {
    if (!moment.empty() && moment.back().t_s != s.t_s) flush();
    moment.push_back(s);
  }
  flush();
  return out;
}

std::string moment(int t, double temp, double gbps) {
  return std::to_string(t) + ",prefill,temperature_c," + std::to_string(temp) + "\n" + std::to_string(t) +
         ",prefill,link_gbps," + std::to_string(gbps) + "\n";
}

TEST(degradation_policy_test, heat_ramp_degrades_then_co_locates_and_recovers_one_step_at_a_time) {
  std::string csv = "time_s,device,metric,value\n";
  const double temp[] = {60, 70, 78, 80, 82, 82, 82, 82, 70, 70, 70, 70, 70, 70};
  const double gbps[] = {200, 195, 180, 170, 160, 150, 140, 140, 200, 200, 200, 200, 200, 200};
  for (int t = 0; t < 14; ++t) csv += moment(t, temp[t], gbps[t]);
  degradation_policy p;
  EXPECT_EQ(replay(csv, p), (std::vector<std::string>{"3:healthy>link-degraded", "7:link-degraded>co-located",
                                                      "10:co-located>link-degraded", "13:link-degraded>healthy"}));
  EXPECT_EQ(p.transitions()[0].reason, "prefill at 80 C");
  EXPECT_NE(p.transitions()[1].reason.find("sustained"), std::string::npos) << p.transitions()[1].reason;
}

TEST(degradation_policy_test, a_flapping_link_holds_link_degraded) {
  std::string csv;
  for (int t = 0; t < 12; ++t) csv += moment(t, 60, t % 2 ? 140 : 200);
  degradation_policy p;
  EXPECT_EQ(replay(csv, p), (std::vector<std::string>{"1:healthy>link-degraded"}));
  EXPECT_EQ(p.state(), degradation_state::link_degraded) << "never three healthy samples in a row";
}

TEST(degradation_policy_test, a_lost_device_falls_back_at_once_and_comes_back_step_by_step) {
  std::string csv = "0,decode,lost,0\n1,decode,lost,1\n";
  for (int t = 2; t <= 10; ++t) csv += std::to_string(t) + ",decode,lost,0\n";
  degradation_policy p;
  EXPECT_EQ(replay(csv, p), (std::vector<std::string>{"1:healthy>cpu-fallback", "4:cpu-fallback>co-located",
                                                      "7:co-located>link-degraded", "10:link-degraded>healthy"}));
  EXPECT_EQ(p.transitions()[0].reason, "decode lost");
}

TEST(degradation_policy_test, rising_error_counters_degrade_and_a_flat_counter_recovers) {
  degradation_policy p;
  EXPECT_EQ(replay("0,nvlink0,link_errors,3\n1,nvlink0,link_errors,3\n2,nvlink0,link_errors,9\n"
                   "3,nvlink0,link_errors,9\n4,nvlink0,link_errors,9\n5,nvlink0,link_errors,9\n",
                   p),
            (std::vector<std::string>{"2:healthy>link-degraded", "5:link-degraded>healthy"}));
}

TEST(degradation_policy_test, severe_readings_co_locate_without_waiting) {
  degradation_policy p;
  EXPECT_EQ(replay(moment(0, 60, 200) + moment(1, 91, 200), p), (std::vector<std::string>{"1:healthy>co-located"}));
  degradation_policy q;
  EXPECT_EQ(replay(moment(0, 60, 200) + moment(1, 60, 90), q), (std::vector<std::string>{"1:healthy>co-located"}));
}

TEST(degradation_policy_test, malformed_traces_are_refused_with_their_line) {
  auto err = [](const std::string& text) {
    auto r = parse_telemetry_trace(text, "t.csv");
    EXPECT_FALSE(r);
    return r ? std::string() : r.err().message;
  };
  EXPECT_EQ(err("0,a,temperature_c\n"), "t.csv:1: expected 4 fields time_s,device,metric,value, found 3");
  EXPECT_EQ(err("0,a,temperature_c,1\n1,a,heat,3\n"),
            "t.csv:2: unknown metric 'heat' (known: temperature_c, link_gbps, link_errors, lost)");
  EXPECT_EQ(err("# c\n2,a,lost,0\n1,a,lost,0\n"), "t.csv:3: time goes backwards (1 after 2.000000)");
  EXPECT_EQ(err("x,a,lost,0\n"), "t.csv:1: time_s 'x' is not a number >= 0");
  EXPECT_EQ(err("0,a,lost,nan\n"), "t.csv:1: value 'nan' is not a number");
  EXPECT_EQ(err("0,a,lost,0,7\n"), "t.csv:1: more than 4 fields (expected time_s,device,metric,value)");
  EXPECT_EQ(err("# nothing\n"), "t.csv: no samples in the trace");
  EXPECT_EQ(err(std::string("0,a,lost,0\n\0\1", 13)), "t.csv: not a text file (a NUL byte)");
  auto ok = parse_telemetry_trace("time_s,device,metric,value\n0.5, prefill , link_gbps , 200 # nominal\n", "t.csv");
  ASSERT_TRUE(ok);
  ASSERT_EQ(ok->size(), 1u);
  EXPECT_EQ((*ok)[0].device, "prefill");
  EXPECT_DOUBLE_EQ((*ok)[0].value, 200);
}

}  // namespace
}  // namespace fw

namespace fw {
namespace {

TEST(thermal_source_test, reads_the_hottest_zone_or_says_there_is_none) {
  namespace fs = std::filesystem;
  const fs::path root = fs::temp_directory_path() / ("fw_thermal_" + std::to_string(::getpid()));
  fs::remove_all(root);
  EXPECT_FALSE(thermal_source(root.string()).available());
  EXPECT_NE(thermal_source(root.string()).describe().find("not monitored"), std::string::npos);
  fs::create_directories(root / "thermal/thermal_zone0");
  fs::create_directories(root / "hwmon/hwmon3");
  std::ofstream(root / "thermal/thermal_zone0/temp") << "54000\n";
  std::ofstream(root / "hwmon/hwmon3/temp2_input") << "81500\n";
  std::ofstream(root / "hwmon/hwmon3/temp2_label") << "Tctl\n";
  thermal_source src(root.string());
  ASSERT_TRUE(src.available());
  EXPECT_NE(src.describe().find("1 thermal zone(s), 1 hwmon sensor(s)"), std::string::npos) << src.describe();
  auto s = src.sample(7.0);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].device, "cpu");
  EXPECT_EQ(s[0].metric, "temperature_c");
  EXPECT_DOUBLE_EQ(s[0].value, 81.5);
  EXPECT_DOUBLE_EQ(s[0].t_s, 7.0);
  fs::remove_all(root);
}

}  // namespace
}  // namespace fw
