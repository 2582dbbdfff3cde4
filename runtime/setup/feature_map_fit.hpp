// feature_map_fit: the feature draft's map fitted on a prompt file and written to disk, as
// `flywheel fit-draft` does and as runtime/setup does on first use: a configuration that asks for
// draft = "feature" or "hybrid" while [speculative] feature_map does not exist yet gets it fitted
// on [speculative] feature_prompts (the shipped conf/calibration/prompts.txt by default) with a
// progress line, instead of an error. Nothing is fitted for a configuration that does not ask.
// Thread-safety: runs the target's forwards on the calling thread and the given kernel threads.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "runtime/base/expected.hpp"
#include "runtime/device/backend.hpp"
#include "runtime/model/model.hpp"
#include "runtime/spec/drafts/feature_fit.hpp"

namespace fw {

/// One user message per line of `path`, in file order (the calibration-file rules: '\n' is a line
/// break, '#' and empty lines are skipped, binary or non-UTF-8 files are refused).
expected<std::vector<std::string>> read_prompt_file(const std::string& path);

/// Fits the map on the prompts of `prompts_path` (each a user turn of the model's chat template)
/// and saves it to `out`.
expected<feature_map> fit_feature_map_file(const model& m, backend& target, cpu::thread_pool& threads,
                                           const std::string& prompts_path, const std::string& out,
                                           feature_fit_options options, feature_fit_report* report = nullptr);

}  // namespace fw
