#include "tools/console/health_report.hpp"

#include "tools/console/format_line.hpp"

namespace fw::console {

std::string format_health(const actors::worker_health& h) {
  std::string out = "workers:";
  for (size_t i = 0; i < h.names.size(); ++i) {
    out += " " + h.names[i] + " " + h.states[i];
    if (h.crashes[i] > 0) {
      out += format_line(" (%llu crash%s", static_cast<unsigned long long>(h.crashes[i]), h.crashes[i] == 1 ? "" : "es");
      if (h.escalations[i] > 0) out += format_line(", marked down %llu times", static_cast<unsigned long long>(h.escalations[i]));
      out += ", last: " + h.last_reason[i] + ")";
    }
    out += i + 1 < h.names.size() ? "," : "";
  }
  out += "\ndegradation: " + h.degradation;
  if (!h.degradation_reason.empty()) out += " (" + h.degradation_reason + ")";
  out += format_line(", %llu transition%s\n", static_cast<unsigned long long>(h.transitions_total),
                     h.transitions_total == 1 ? "" : "s");
  for (const auto& t : h.transitions) out += "  " + t + "\n";
  if (!h.readings.empty()) {
    out += "telemetry:";
    for (const auto& r : h.readings) out += format_line(" %s %s=%g", r.device.c_str(), r.metric.c_str(), r.value);
    out += "\n";
  }
  out += "telemetry source: " + h.telemetry + "\n";
  return out;
}

}  // namespace fw::console
