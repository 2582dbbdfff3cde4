// quality_runner: the command-line side of the quality report (`flywheel eval` and `flywheel
// quantize --report`): builds the model and its reference through runtime/setup, each with a
// layer_capture, tokenizes the held-out text and the queries, runs evaluate_quality and prints
// the table (stdout) and JSON (--json FILE).
#pragma once

#include <atomic>
#include <string>

#include <nlohmann/json.hpp>
#include "runtime/config/config.hpp"
#include "runtime/quant/quality_eval.hpp"

namespace fw::cli {

struct quality_run {
  std::string model_path, ref_path;
  std::string text_path;     ///< held-out text ('#' lines skipped)
  std::string queries_path;  ///< greedy-agreement queries (one per line); empty: none
  uint32_t max_queries = 16;
  quality_options options;
};

/// Runs the report with `cfg` (threads, KV settings) for both models.
expected<quality_report> run_quality(const config& cfg, const quality_run& run);
/// The report as a table for a terminal.
void print_quality(const quality_report& r, const quality_run& run);
nlohmann::json quality_json(const quality_report& r, const quality_run& run);
/// Reads a held-out text file: its lines minus '#' comment lines.
expected<std::string> read_eval_text(const std::string& path);

}  // namespace fw::cli
