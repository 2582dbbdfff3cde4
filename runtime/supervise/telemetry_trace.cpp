#include "runtime/supervise/telemetry_trace.hpp"

#include <charconv>
#include <cmath>
#include <fstream>
#include <sstream>

namespace fw {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

bool to_double(std::string_view s, double& out) {
  const char* end = s.data() + s.size();
  auto r = std::from_chars(s.data(), end, out);
  return r.ec == std::errc() && r.ptr == end && std::isfinite(out);
}

bool known_metric(std::string_view m) {
  namespace tm = telemetry_metric;
  return m == tm::temperature_c || m == tm::link_gbps || m == tm::link_errors || m == tm::lost;
}

}  // namespace

expected<std::vector<telemetry_sample>> parse_telemetry_trace(std::string_view text, std::string_view name) {
  std::vector<telemetry_sample> out;
  size_t line_no = 0;
  double last_t = 0;
  auto bad = [&](const std::string& what) {
    return make_error(errc::invalid_argument, std::string(name) + ":" + std::to_string(line_no) + ": " + what);
  };
  if (text.find('\0') != std::string_view::npos)
    return make_error(errc::invalid_argument, std::string(name) + ": not a text file (a NUL byte)");
  while (!text.empty()) {
    ++line_no;
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    if (auto hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    line = trim(line);
    if (line.empty()) continue;
    std::string_view f[4];
    size_t n = 0;
    while (n < 4) {
      const size_t c = line.find(',');
      f[n++] = trim(line.substr(0, c));
      if (c == std::string_view::npos) {
        line = {};
        break;
      }
      line = line.substr(c + 1);
      if (n == 4) return bad("more than 4 fields (expected time_s,device,metric,value)");
    }
    if (n != 4) return bad("expected 4 fields time_s,device,metric,value, found " + std::to_string(n));
    if (out.empty() && f[0] == "time_s") continue;  // the header
    telemetry_sample s;
    if (!to_double(f[0], s.t_s) || s.t_s < 0) return bad("time_s '" + std::string(f[0]) + "' is not a number >= 0");
    if (s.t_s < last_t) return bad("time goes backwards (" + std::string(f[0]) + " after " + std::to_string(last_t) + ")");
    if (f[1].empty()) return bad("empty device name");
    if (!known_metric(f[2]))
      return bad("unknown metric '" + std::string(f[2]) + "' (known: temperature_c, link_gbps, link_errors, lost)");
    if (!to_double(f[3], s.value)) return bad("value '" + std::string(f[3]) + "' is not a number");
    last_t = s.t_s;
    s.device = std::string(f[1]);
    s.metric = std::string(f[2]);
    out.push_back(std::move(s));
  }
  if (out.empty()) return make_error(errc::invalid_argument, std::string(name) + ": no samples in the trace");
  return out;
}

expected<std::vector<telemetry_sample>> read_telemetry_trace(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(errc::io_error, "cannot read telemetry trace " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return parse_telemetry_trace(ss.str(), path);
}

}  // namespace fw
