// format_line: printf-style formatting into a std::string, for the console's report lines.
#pragma once

#include <cstdarg>
#include <cstdio>
#include <string>

namespace fw::console {

__attribute__((format(printf, 1, 2))) inline std::string format_line(const char* fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return buf;
}

}  // namespace fw::console
