// ablation_report: what `flywheel bench ablation` shows of a run_ablation result: a table per
// rate on the terminal (goodput, QPS, latency percentiles of short and long requests, acceptance,
// prefix-cache hits, prefill-to-decode latency, peak memory), the ratios the targets name
// (all three vs the baseline, each lever alone, flywheel vs each peer), and an SVG plot (goodput
// and latency percentiles per configuration; goodput against the offered rate for a sweep).
// Thread-safety: pure functions of the JSON.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace fw::cli {

/// The ratios block of a result (added to it by run_ablation): all_vs_baseline goodput and
/// P99 E2E, per lever, and flywheel's best vs each peer; at the first rate.
nlohmann::json ablation_ratios(const nlohmann::json& result);

void print_ablation(const nlohmann::json& result);

std::string ablation_svg(const nlohmann::json& result);

}  // namespace fw::cli
