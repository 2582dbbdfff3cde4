#include "tools/console/health_report.hpp"

#include <cstdio>

#include "runtime/supervise/rollout_breaker.hpp"
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

std::string format_rollout(const actors::scheduler_stats& s) {
  if (s.rollout_stage == 0) return "rollout: off ([rollout] enabled = false): every request gets every configured lever\n";
  std::string out = format_line("rollout: stage %u (%s) serves %.0f%% of new requests", s.rollout_stage,
                                rollout_stage_name(s.rollout_stage), s.rollout_share * 100);
  if (s.rollout_stage > 1) out += format_line(", the rest stage %u", s.rollout_stage - 1);
  out += format_line("; %llu decision%s\n", static_cast<unsigned long long>(s.rollout_decisions),
                     s.rollout_decisions == 1 ? "" : "s");
  for (size_t i = 0; i < s.rollout_requests.size(); ++i)
    out += format_line("  stage %zu %-26s %5llu requests  P99 %8.2f ms/token  errors %.1f%%  draft failures %.1f%%\n",
                       i + 1, rollout_stage_name(static_cast<uint32_t>(i + 1)),
                       static_cast<unsigned long long>(s.rollout_requests[i]), s.rollout_p99_ms[i],
                       s.rollout_error_rate[i] * 100, s.rollout_draft_failure[i] * 100);
  for (const auto& d : s.rollout_log) out += "  " + d + "\n";
  return out;
}

std::string format_peers(const std::vector<actors::peer_report>& peers, uint64_t local_prefills) {
  std::string out = "prefill nodes ([node] peers; " + std::to_string(local_prefills) + " prompts prefilled here):\n";
  for (const auto& p : peers) {
    char line[512];
    const double ms = p.prefills ? 1000 * p.transfer_s / p.prefills : 0;
    std::snprintf(line, sizeof line, "  %s  %s%s%s, %llu prefills, %.1f MB received, P->D %.1f ms avg, %llu failed over\n",
                  p.address.c_str(), p.state.c_str(), p.name.empty() ? "" : (" (" + p.name + ")").c_str(),
                  p.reason.empty() || p.state == "connected" ? "" : (": " + p.reason).c_str(),
                  static_cast<unsigned long long>(p.prefills), p.bytes / 1e6, ms,
                  static_cast<unsigned long long>(p.failovers));
    out += line;
    if (p.forged) out.insert(out.size() - 1, ", " + std::to_string(p.forged) + " forged chunks dropped");
  }
  return out;
}

}  // namespace fw::console
