#include "tools/bench/ablation_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <vector>

namespace fw::cli {

namespace {

using json = nlohmann::json;

/// A number at a JSON path, NaN when absent or null.
double num(const json& j, std::initializer_list<const char*> path) {
  const json* p = &j;
  for (const char* k : path) {
    if (!p->is_object() || !p->contains(k)) return NAN;
    p = &(*p)[k];
  }
  return p->is_number() ? p->get<double>() : NAN;
}

/// The entry of config c at rate r (null when it did not run it).
const json* at_rate(const json& c, double rate) {
  for (const auto& r : c["rates"])
    if (std::fabs(r.value("rate", -1.0) - rate) < 1e-9) return &r;
  return nullptr;
}

std::string ms(double v) {
  if (std::isnan(v)) return "-";
  char b[32];
  if (v >= 1000) std::snprintf(b, sizeof b, "%.1f s", v / 1000);
  else std::snprintf(b, sizeof b, "%.0f", v);
  return b;
}

std::string fixed(double v, const char* fmt) {
  if (std::isnan(v)) return "-";
  char b[32];
  std::snprintf(b, sizeof b, fmt, v);
  return b;
}

std::string ratio(double a, double b) {
  if (std::isnan(a) || std::isnan(b) || b == 0) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2fx", a / b);
  return buf;
}

const json* find_config(const json& result, const std::string& name) {
  for (const auto& c : result["configs"])
    if (c.value("name", "") == name) return &c;
  return nullptr;
}

std::string xml_escape(const std::string& s) {
  std::string o;
  for (char ch : s) {
    if (ch == '&') o += "&amp;";
    else if (ch == '<') o += "&lt;";
    else if (ch == '>') o += "&gt;";
    else o += ch;
  }
  return o;
}

}  // namespace

json ablation_ratios(const json& result) {
  json out = json::object();
  if (!result.contains("rates") || result["rates"].empty()) return out;
  const double rate = result["rates"][0].get<double>();
  out["rate"] = rate;
  const json* base = find_config(result, "baseline");
  auto goodput = [&](const json* c) {
    const json* r = c ? at_rate(*c, rate) : nullptr;
    return r ? num(*r, {"summary", "all", "goodput"}) : NAN;
  };
  auto e2e_p99 = [&](const json* c) {
    const json* r = c ? at_rate(*c, rate) : nullptr;
    return r ? num(*r, {"summary", "all", "e2e_ms", "p99"}) : NAN;
  };
  auto short_ttft_p99 = [&](const json* c) {
    const json* r = c ? at_rate(*c, rate) : nullptr;
    return r ? num(*r, {"summary", "short", "ttft_ms", "p99"}) : NAN;
  };
  auto put = [](double v) { return std::isnan(v) ? json(nullptr) : json(v); };
  if (base) {
    for (const auto& c : result["configs"]) {
      if (c.value("name", "") == "baseline" || c.value("peer", false)) continue;
      const double g = goodput(&c) / goodput(base);
      out["vs_baseline"][c.value("name", "")] = {{"goodput", put(g)}, {"e2e_p99", put(e2e_p99(&c) / e2e_p99(base))},
                                                 {"short_ttft_p99", put(short_ttft_p99(&c) / short_ttft_p99(base))}};
    }
    if (const json* all = find_config(result, "all"); all && result["rates"].size() > 1)
      if (base->value("max_rate_meeting_slo", 0.0) > 0)  // a baseline that meets no rate has no ratio
        out["max_rate_all_vs_baseline"] = all->value("max_rate_meeting_slo", 0.0) / base->value("max_rate_meeting_slo", 0.0);
  }
  // flywheel's best configuration on goodput against each peer.
  const json* best = nullptr;
  for (const auto& c : result["configs"])
    if (!c.value("peer", false) && (!best || goodput(&c) > goodput(best))) best = &c;
  if (best) {
    out["best"] = best->value("name", "");
    for (const auto& c : result["configs"]) {
      if (!c.value("peer", false)) continue;
      out["vs_peers"][c.value("name", "")] = {{"goodput", put(goodput(best) / goodput(&c))},
                                              {"short_ttft_p99_flywheel_ms", put(short_ttft_p99(best))},
                                              {"short_ttft_p99_peer_ms", put(short_ttft_p99(&c))}};
    }
  }
  return out;
}

void print_ablation(const json& result) {
  std::printf("\nflywheel bench ablation - %s, %d threads; workload %s; %.0f s of arrivals per rate; SLO TTFT <= %.0f ms, "
              "TPOT <= %.0f ms\n",
              result.value("host", "").c_str(), result.value("threads", 0), result.value("workload", "").c_str(),
              result.value("duration_s", 0.0), num(result, {"slo", "ttft_ms"}), num(result, {"slo", "tpot_ms"}));
  for (const auto& rj : result["rates"]) {
    const double rate = rj.get<double>();
    std::printf("\nat %.2f requests/s (Poisson):\n", rate);
    std::printf("| configuration | goodput/s | in SLO | QPS | short TTFT p50 / p99 ms | short TPOT p50 / p99 ms | long TTFT p50 / p99 ms "
                "| E2E p50 / p99 ms | accept | prefix hits | prefill->decode ms | peak MiB |\n");
    std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (const auto& c : result["configs"]) {
      if (c.contains("error")) {
        std::printf("| %s | did not start: see %s |\n", c.value("label", "").c_str(), c.value("log", "").c_str());
        continue;
      }
      const json* r = at_rate(c, rate);
      if (!r) continue;
      const json& s = (*r)["summary"];
      auto pair = [&](const char* cls, const char* what) {
        return ms(num(s, {cls, what, "p50"})) + " / " + ms(num(s, {cls, what, "p99"}));
      };
      const double errors = num(s, {"all", "requests"}) - num(s, {"all", "completed"});
      std::printf("| %s%s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", c.value("label", "").c_str(),
                  errors > 0 ? (" (" + fixed(errors, "%.0f") + " unfinished)").c_str() : "",
                  fixed(num(s, {"all", "goodput"}), "%.2f").c_str(),
                  fixed(100 * num(s, {"all", "slo_attainment"}), "%.0f%%").c_str(),
                  fixed(num(s, {"all", "qps"}), "%.2f").c_str(), pair("short", "ttft_ms").c_str(),
                  pair("short", "tpot_ms").c_str(), pair("long", "ttft_ms").c_str(), pair("all", "e2e_ms").c_str(),
                  fixed(100 * num(*r, {"server", "acceptance"}), "%.0f%%").c_str(),
                  fixed(100 * num(*r, {"server", "prefix_cache_hit_rate"}), "%.0f%%").c_str(),
                  fixed(num(*r, {"server", "prefill_to_decode_ms"}), "%.2f").c_str(),
                  fixed(num(c, {"peak_rss_mib"}), "%.0f").c_str());
    }
  }
  if (result["rates"].size() > 1) {
    std::printf("\nhighest rate with %.0f%% of requests within the SLO:\n", 100 * num(result, {"slo", "share"}));
    for (const auto& c : result["configs"])
      std::printf("  %-44s %.2f req/s\n", c.value("label", "").c_str(), c.value("max_rate_meeting_slo", 0.0));
  }
  if (result.contains("quality") && result["quality"].is_object()) {
    const auto& q = result["quality"];
    std::printf("\nquality of the quantized weights on the workload's texts: perplexity %.4f vs %.4f 16-bit (%+.2f%%), "
                "top-1 agreement %.1f%%\n",
                num(q, {"perplexity"}), num(q, {"perplexity_ref"}), 100 * num(q, {"perplexity_delta"}),
                100 * num(q, {"top1_agreement"}));
  }
  const json& ra = result["ratios"];
  if (ra.contains("vs_baseline")) {
    std::printf("\nagainst the baseline at %.2f req/s (goodput higher is better; latency lower):\n", num(ra, {"rate"}));
    for (const auto& [name, v] : ra["vs_baseline"].items())
      std::printf("  %-11s goodput %s   P99 E2E %s   short TTFT P99 %s\n", name.c_str(),
                  ratio(num(v, {"goodput"}), 1).c_str(), ratio(num(v, {"e2e_p99"}), 1).c_str(),
                  ratio(num(v, {"short_ttft_p99"}), 1).c_str());
  }
  if (ra.contains("vs_peers"))
    for (const auto& [name, v] : ra["vs_peers"].items())
      std::printf("  flywheel (%s) vs %s: goodput %s; short TTFT P99 %s vs %s\n", ra.value("best", "").c_str(), name.c_str(),
                  ratio(num(v, {"goodput"}), 1).c_str(), ms(num(v, {"short_ttft_p99_flywheel_ms"})).c_str(),
                  ms(num(v, {"short_ttft_p99_peer_ms"})).c_str());
}

std::string ablation_svg(const json& result) {
  // Three panels of horizontal bars at the first rate - goodput, short requests' TTFT P50/P99
  // and every request's E2E P50/P99 (latencies on a log scale) - and, for a sweep, goodput
  // against the offered rate per configuration.
  const auto& configs = result["configs"];
  const double rate = result["rates"].empty() ? 0 : result["rates"][0].get<double>();
  const int rows = static_cast<int>(configs.size());
  const int label_w = 250, panel_w = 220, gap = 30, row_h = 26, top = 60;
  const bool sweep = result["rates"].size() > 1;
  const int width = label_w + 3 * (panel_w + gap) + (sweep ? panel_w + 2 * gap + 80 : 0);
  const int height = top + rows * row_h + 70;
  const char* colors[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7"};
  std::ostringstream s;
  s << "<svg xmlns='http://www.w3.org/2000/svg' width='" << width << "' height='" << height
    << "' font-family='sans-serif' font-size='12'>\n<rect width='100%' height='100%' fill='white'/>\n";
  char title[256];
  std::snprintf(title, sizeof title, "flywheel bench ablation - %s - %.2f req/s, SLO TTFT %.0f ms / TPOT %.0f ms",
                result.value("host", "").c_str(), rate, num(result, {"slo", "ttft_ms"}), num(result, {"slo", "tpot_ms"}));
  s << "<text x='10' y='20' font-size='14' font-weight='bold'>" << xml_escape(title) << "</text>\n";
  for (int i = 0; i < rows; ++i)
    s << "<text x='10' y='" << top + i * row_h + 17 << "'>" << xml_escape(configs[i].value("label", "")) << "</text>\n";
  struct panel {
    const char* title;
    const char* cls;
    const char* metric;
    bool log;
  };
  const panel panels[] = {{"goodput (req/s within the SLO)", "all", "goodput", false},
                          {"short requests: TTFT p50 | p99 (ms, log)", "short", "ttft_ms", true},
                          {"all requests: E2E p50 | p99 (ms, log)", "all", "e2e_ms", true}};
  for (int p = 0; p < 3; ++p) {
    const int x0 = label_w + p * (panel_w + gap);
    s << "<text x='" << x0 << "' y='" << top - 10 << "' font-weight='bold'>" << panels[p].title << "</text>\n";
    std::vector<double> lo(rows, NAN), hi(rows, NAN);
    double vmax = 0;
    for (int i = 0; i < rows; ++i) {
      const json* r = at_rate(configs[i], rate);
      if (!r) continue;
      const json& sm = (*r)["summary"];
      if (panels[p].log) {
        lo[i] = num(sm, {panels[p].cls, panels[p].metric, "p50"});
        hi[i] = num(sm, {panels[p].cls, panels[p].metric, "p99"});
      } else {
        hi[i] = num(sm, {panels[p].cls, panels[p].metric});
      }
      if (!std::isnan(hi[i])) vmax = std::max(vmax, hi[i]);
    }
    if (vmax <= 0) continue;
    const double lmin = 1.0, lmax = std::log10(std::max(vmax, 10.0)) + 0.1;  // 10 ms .. max
    auto x_of = [&](double v) {
      if (!panels[p].log) return x0 + panel_w * v / vmax;
      return x0 + panel_w * std::clamp((std::log10(std::max(v, 1.0)) - lmin) / (lmax - lmin), 0.0, 1.0);
    };
    s << "<line x1='" << x0 << "' y1='" << top << "' x2='" << x0 << "' y2='" << top + rows * row_h
      << "' stroke='#999'/>\n";
    for (int i = 0; i < rows; ++i) {
      const int y = top + i * row_h + 4;
      const char* color = colors[i % 8];
      if (std::isnan(hi[i])) continue;
      if (panels[p].log && !std::isnan(lo[i])) {
        s << "<rect x='" << x0 << "' y='" << y << "' width='" << x_of(hi[i]) - x0 << "' height='18' fill='" << color
          << "' fill-opacity='0.35'/>\n";
        s << "<rect x='" << x0 << "' y='" << y << "' width='" << x_of(lo[i]) - x0 << "' height='18' fill='" << color << "'/>\n";
        s << "<text x='" << x_of(hi[i]) + 3 << "' y='" << y + 13 << "' font-size='10'>" << ms(lo[i]) << " | " << ms(hi[i])
          << "</text>\n";
      } else {
        s << "<rect x='" << x0 << "' y='" << y << "' width='" << x_of(hi[i]) - x0 << "' height='18' fill='" << color << "'/>\n";
        s << "<text x='" << x_of(hi[i]) + 3 << "' y='" << y + 13 << "' font-size='10'>" << fixed(hi[i], "%.2f") << "</text>\n";
      }
    }
  }
  if (sweep) {
    // Goodput against the offered rate.
    const int x0 = label_w + 3 * (panel_w + gap) + gap, y0 = top, h = rows * row_h;
    double rmax = 0, gmax = 0;
    for (const auto& r : result["rates"]) rmax = std::max(rmax, r.get<double>());
    for (const auto& c : configs)
      for (const auto& r : c["rates"]) gmax = std::max(gmax, num(r, {"summary", "all", "goodput"}));
    gmax = std::max(gmax, rmax);
    s << "<text x='" << x0 << "' y='" << top - 10 << "' font-weight='bold'>goodput vs offered rate (req/s)</text>\n";
    s << "<rect x='" << x0 << "' y='" << y0 << "' width='" << panel_w << "' height='" << h
      << "' fill='none' stroke='#999'/>\n";
    for (size_t i = 0; i < configs.size(); ++i) {
      std::ostringstream pts;
      for (const auto& r : configs[i]["rates"]) {
        const double g = num(r, {"summary", "all", "goodput"});
        pts << x0 + panel_w * r.value("rate", 0.0) / rmax << "," << y0 + h - h * (std::isnan(g) ? 0 : g) / gmax << " ";
      }
      s << "<polyline fill='none' stroke-width='2' stroke='" << colors[i % 8] << "' points='" << pts.str() << "'/>\n";
    }
    s << "<text x='" << x0 << "' y='" << y0 + h + 14 << "' font-size='10'>0</text><text x='" << x0 + panel_w - 20 << "' y='"
      << y0 + h + 14 << "' font-size='10'>" << fixed(rmax, "%.1f") << "</text>\n";
  }
  s << "<text x='10' y='" << height - 20 << "' font-size='10' fill='#555'>"
    << xml_escape("workload " + result.value("workload", "") + "; bars: p50 solid, p99 light; " +
                  std::to_string(static_cast<int>(result.value("duration_s", 0.0))) + " s per rate")
    << "</text>\n</svg>\n";
  return s.str();
}

}  // namespace fw::cli
