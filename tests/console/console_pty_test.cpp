// `flywheel console` on a pseudo-terminal: the prompt, Ctrl-C at the prompt (clears the line),
// Ctrl-C during a long answer (stops the generation, not the console), :stats afterwards, Tab
// completion, Ctrl-D (quits with exit code 0).
#include <gtest/gtest.h>

#include "tests/console/console_process.hpp"

namespace fw::test {
namespace {

using namespace std::chrono_literals;

TEST(console_pty_test, ctrl_c_stops_a_generation_and_the_console_answers) {
  FW_REQUIRE_CONSOLE();
  pty_session s({flywheel_binary(), "console", "--config", default_config(), "--history", ""});
  if (!s.started()) GTEST_SKIP() << "no pseudo-terminal available here (forkpty failed)";
  ASSERT_TRUE(s.wait_for("Ctrl-D quits.")) << s.screen();
  ASSERT_TRUE(s.wait_for("> ")) << s.screen();

  // Ctrl-C at the prompt drops the typed text; the console waits for the next line.
  size_t at = s.mark();
  s.type("this text is dropped");
  ASSERT_TRUE(s.wait_for("dropped", at));
  s.type("\x03");
  at = s.mark();
  ASSERT_TRUE(s.wait_for("> ", at)) << s.screen();
  s.type(":get max_tokens\r");
  ASSERT_TRUE(s.wait_for("sampling.max_tokens = 128", at)) << s.screen().substr(at);
  EXPECT_EQ(s.screen().find("error:", at), std::string::npos) << s.screen().substr(at);

  // Tab completes a command and a :set key.
  at = s.mark();
  s.type(":se\tmax_tok\t400\r");
  ASSERT_TRUE(s.wait_for("sampling.max_tokens = 400", at)) << s.screen().substr(at);
  at = s.mark();
  s.type(":set temperature 0\r");
  ASSERT_TRUE(s.wait_for("sampling.temperature = 0.0", at)) << s.screen().substr(at);

  // A long answer, stopped by Ctrl-C once it streams. Typed-ahead text is echoed by the tty and
  // then redrawn by libedit: the answer is what follows the last echo of the line.
  at = s.mark();
  s.type("Tell me a long story about a dragon who learns to bake bread.\r");
  const std::string line_end = "bake bread.\r\n";
  auto answer_so_far = [&] {
    const size_t p = s.screen().rfind(line_end);
    return p == std::string::npos || p < at ? std::string() : s.screen().substr(p + line_end.size());
  };
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  for (;;) {
    const std::string a = answer_so_far();
    if (a.size() >= 20 && a.find("Tell me") == std::string::npos && a.find("> ") == std::string::npos) break;
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << s.screen().substr(at);
    s.drain(20ms);
  }
  const size_t answer_at = s.screen().rfind(line_end) + line_end.size();
  s.type("\x03");
  ASSERT_TRUE(s.wait_for("[generation stopped: ", answer_at)) << s.screen().substr(answer_at);
  ASSERT_TRUE(s.wait_for("> ", s.screen().find("[generation stopped: ", answer_at))) << s.screen().substr(answer_at);

  // Still alive: :stats reports the cancelled turn.
  at = s.mark();
  s.type(":stats\r");
  ASSERT_TRUE(s.wait_for("speculation:", at)) << s.screen().substr(at);
  const std::string stats = s.screen().substr(at);
  EXPECT_NE(stats.find("(finish: cancelled)"), std::string::npos) << stats;
  EXPECT_NE(stats.find("TTFT "), std::string::npos) << stats;
  EXPECT_NE(stats.find("totals: 1 request (1 cancelled, 0 failed)"), std::string::npos) << stats;
  EXPECT_NE(stats.find("runtime: "), std::string::npos) << stats;
  // The cancelled sequence leaves the runtime (its KV blocks return to the pool) shortly after.
  bool idle = stats.find("runtime: 0 waiting, 0 prefilling, 0 decoding, KV cache 0/") != std::string::npos;
  for (int i = 0; i < 20 && !idle; ++i) {
    std::this_thread::sleep_for(100ms);
    at = s.mark();
    s.type(":stats\r");
    ASSERT_TRUE(s.wait_for("speculation:", at)) << s.screen().substr(at);
    idle = s.screen().find("runtime: 0 waiting, 0 prefilling, 0 decoding, KV cache 0/", at) != std::string::npos;
  }
  EXPECT_TRUE(idle) << s.screen().substr(at);

  // Ctrl-D at an empty prompt quits; at a terminal the exit code is 0. A Ctrl-D that lands just
  // before libedit switches the terminal to raw mode is the tty's end-of-file and is lost: retry.
  ASSERT_TRUE(s.wait_for("> ", s.screen().rfind("speculation:"))) << s.screen().substr(at);
  int rc = -1;
  for (int i = 0; i < 5 && rc == -1; ++i) {
    s.type("\x04");
    rc = s.wait_exit(std::chrono::seconds(i < 4 ? 3 : 30));
  }
  EXPECT_EQ(rc, 0) << s.screen().substr(at);
}

}  // namespace
}  // namespace fw::test
