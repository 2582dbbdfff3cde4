// The console's command table, :help text, settable keys and tab completion (no model needed).
#include "tools/console/console_commands.hpp"

#include <gtest/gtest.h>

#include <set>

#include "tools/console/turn_stats.hpp"

namespace fw::console {
namespace {

using strings = std::vector<std::string>;

TEST(console_commands_test, table_and_help) {
  std::set<std::string_view> names;
  for (const auto& c : commands()) {
    EXPECT_TRUE(c.name.starts_with(":")) << c.name;
    EXPECT_TRUE(names.insert(c.name).second) << "duplicate " << c.name;
    EXPECT_EQ(find_command(c.name), &c);
    EXPECT_NE(help_text().find(std::string(c.name)), std::string::npos) << c.name;
    EXPECT_EQ(c.help.find('\n'), std::string_view::npos) << "one line of help: " << c.name;
  }
  for (const char* n : {":help", ":reset", ":gen", ":set", ":get", ":stats", ":metrics", ":kernels", ":config",
                        ":devices", ":plugins", ":load", ":unload", ":reload", ":quit"})
    EXPECT_TRUE(names.count(n)) << n;
  EXPECT_EQ(find_command(":q")->id, command_id::quit);
  EXPECT_EQ(find_command(":nope"), nullptr);
  EXPECT_EQ(nearest_command(":stat"), ":stats");
  EXPECT_EQ(nearest_command(":sett"), ":set");
  EXPECT_EQ(nearest_command(":xyzzyplugh"), "");
}

TEST(console_commands_test, settable_keys_are_sampling_and_speculative) {
  for (const auto& k : settable_keys())
    EXPECT_TRUE(k.starts_with("sampling.") || k.starts_with("speculative.")) << k;
  std::string q;
  EXPECT_TRUE(is_settable("temperature", &q));
  EXPECT_EQ(q, "sampling.temperature");
  EXPECT_TRUE(is_settable("speculative.k", &q));
  EXPECT_EQ(q, "speculative.k");
  EXPECT_FALSE(is_settable("model.path"));
  EXPECT_FALSE(is_settable("ctx_size"));
  EXPECT_FALSE(is_settable("nope"));
}

TEST(console_commands_test, completion) {
  EXPECT_EQ(complete_line(":se").candidates, (strings{":set"}));
  EXPECT_EQ(complete_line(":re").candidates, (strings{":reload", ":reset"}));
  EXPECT_EQ(complete_line(":").candidates.size(), commands().size());
  EXPECT_TRUE(complete_line("hello").candidates.empty()) << "chat text is not completed";

  auto c = complete_line(":set temp");
  EXPECT_EQ(c.word_start, 5u);
  EXPECT_EQ(c.candidates, (strings{"temperature"}));
  c = complete_line(":set  sampling.top");
  EXPECT_EQ(c.word_start, 6u);
  EXPECT_EQ(c.candidates, (strings{"sampling.top_k", "sampling.top_p"}));
  EXPECT_TRUE(complete_line(":set ctx").candidates.empty()) << ":set offers settable keys only";
  EXPECT_EQ(complete_line(":get ctx").candidates, (strings{"ctx_size"}));
  EXPECT_TRUE(complete_line(":set temperature 0").candidates.empty()) << "values are not completed";
  EXPECT_TRUE(complete_line(":gen temp").candidates.empty());
}

TEST(console_commands_test, turn_stats_lines) {
  turn_stats s;
  EXPECT_EQ(s.last_line(), "last turn: none yet");
  turn_record t;
  t.prompt_tokens = 10;
  t.generated_tokens = 5;
  t.ttft_ms = 40;
  t.tpot_ms = 8;
  t.total_ms = 72;
  t.finish = "length";
  s.record(t);
  EXPECT_EQ(s.last_line(),
            "last turn: 10 prompt tokens, 5 generated, TTFT 40.0 ms, TPOT 8.0 ms, 125.0 tokens/s, total 72 ms "
            "(finish: length)");
  t.cancelled = true;
  t.finish = "cancelled";
  t.generated_tokens = 0;
  t.tpot_ms = 0;
  s.record(t);
  EXPECT_EQ(s.totals_line(),
            "totals: 2 requests (1 cancelled, 0 failed), 20 prompt tokens, 5 generated, mean TTFT 40.0 ms, "
            "125.0 tokens/s");
  EXPECT_EQ(s.summary_line(), "[0 tokens, finish: cancelled]");
}

}  // namespace
}  // namespace fw::console
