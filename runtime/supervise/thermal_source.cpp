#include "runtime/supervise/thermal_source.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>

namespace fw {
namespace fs = std::filesystem;

thermal_source::thermal_source(std::string root) : root_(std::move(root)) {
  std::error_code ec;
  auto starts = [](const std::string& name, const char* prefix) { return name.rfind(prefix, 0) == 0; };
  for (const auto& e : fs::directory_iterator(fs::path(root_) / "thermal", ec))
    if (starts(e.path().filename().string(), "thermal_zone") && fs::exists(e.path() / "temp", ec)) {
      files_.push_back((e.path() / "temp").string());
      ++zones_;
    }
  for (const auto& e : fs::directory_iterator(fs::path(root_) / "hwmon", ec)) {
    if (!starts(e.path().filename().string(), "hwmon")) continue;
    for (const auto& f : fs::directory_iterator(e.path(), ec)) {
      const std::string n = f.path().filename().string();
      if (starts(n, "temp") && n.size() > 6 && n.substr(n.size() - 6) == "_input") {
        files_.push_back(f.path().string());
        ++hwmon_;
      }
    }
  }
  std::sort(files_.begin(), files_.end());
}

std::string thermal_source::describe() const {
  if (files_.empty()) return "no thermal zones or hwmon temperature sensors under " + root_ + ": CPU temperature is not monitored";
  return std::to_string(zones_) + " thermal zone(s), " + std::to_string(hwmon_) + " hwmon sensor(s) under " + root_;
}

std::vector<telemetry_sample> thermal_source::sample(double now_s) const {
  bool any = false;
  double hottest = 0;
  for (const auto& f : files_) {
    std::ifstream in(f);
    long long milli = 0;
    if (!(in >> milli)) continue;
    const double c = static_cast<double>(milli) / 1000.0;
    if (!any || c > hottest) hottest = c;
    any = true;
  }
  if (!any) return {};
  return {telemetry_sample{now_s, "cpu", std::string(telemetry_metric::temperature_c), hottest}};
}

}  // namespace fw
