// logging_section: [logging], the least severe runtime message printed (runtime/base/log).
// Thread-safety: plain value.
#pragma once

#include "runtime/config/sections/enum_names.hpp"

namespace fw {

/// Mirrors runtime/base/log.hpp's levels (runtime/setup maps one to the other).
enum class logging_level { debug, info, warn, error };
inline constexpr enum_table<logging_level, 4> logging_level_names = {{
    {logging_level::debug, "debug"}, {logging_level::info, "info"},
    {logging_level::warn, "warn"}, {logging_level::error, "error"}}};

struct logging_section {
  logging_level level = logging_level::info;
  bool operator==(const logging_section&) const = default;
};

}  // namespace fw
