// progress_line: a log line written while "label ..." is open gets a line of its own (the
// progress line ends first and is written again below it), and the previous log sink is back
// after finish().
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "runtime/base/log.hpp"
#include "tools/console/progress_line.hpp"

namespace fw::console {
namespace {

std::string contents(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string out;
  char buf[256];
  while (size_t n = std::fread(buf, 1, sizeof buf, f)) out.append(buf, n);
  return out;
}

TEST(progress_line_test, a_log_line_never_shares_the_progress_line) {
  std::vector<std::string> logged;
  auto before = set_log_sink([&](log_level, std::string_view text) { logged.emplace_back(text); });
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    progress_line p(f, "starting the runtime");
    log_warn("supervisor: something worth saying");
    p.finish("done");
  }
  const std::string text = contents(f);
  std::fclose(f);
  ASSERT_EQ(logged.size(), 1u);
  EXPECT_EQ(logged[0], "supervisor: something worth saying");
  EXPECT_EQ(text.rfind("starting the runtime ...\nstarting the runtime ... done in ", 0), 0u) << text;
  EXPECT_EQ(text.back(), '\n');
  log_warn("after the progress line");
  ASSERT_EQ(logged.size(), 2u) << "finish() put the previous sink back";
  set_log_sink(before);
}

}  // namespace
}  // namespace fw::console
