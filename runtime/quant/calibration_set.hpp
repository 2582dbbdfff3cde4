// calibration_set: the user's queries a calibrated quantization is tuned on. One query per line
// (like fit-draft's prompt file: '\n' inside a line is a line break, '#' lines and empty lines
// are skipped); the longest N are kept, optionally with perturbed copies (typos, swapped and
// dropped characters) so the scales are not tuned to clean text only. A file that is missing,
// empty, binary or too short is refused with a message that says what is wrong.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/base/expected.hpp"

namespace fw {

struct calibration_options {
  uint32_t max_queries = 100;  ///< the longest N queries are kept
  double noise = 0;            ///< fraction of queries that get a perturbed copy, 0..1
  uint64_t seed = 1;           ///< for the perturbations
  uint32_t min_queries = 4;    ///< fewer usable queries than this: refused
  bool longest_first = true;   ///< false: file order (the first max_queries)
};

/// The queries of `text` (a file's contents; `path` names it in errors).
expected<std::vector<std::string>> parse_calibration_text(const std::string& text, const std::string& path,
                                                          const calibration_options& options);
/// Reads and parses a calibration file.
expected<std::vector<std::string>> read_calibration_file(const std::string& path, const calibration_options& options);

/// A copy of `text` with about one typo per 12 characters (swap, drop, double or replace a
/// letter), deterministic for a seed. UTF-8 sequences are never split.
std::string perturb_text(const std::string& text, uint64_t seed);

}  // namespace fw
