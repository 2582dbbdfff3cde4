// edit_distance: Levenshtein distance between two short strings, for "did you mean" hints in
// config errors and console commands. Thread-safety: pure function.
#pragma once

#include <cstddef>
#include <string_view>

namespace fw {

size_t edit_distance(std::string_view a, std::string_view b, bool ignore_case = false);

}  // namespace fw
