// `flywheel console` driven through pipes with scripted sessions on the real model: a chat turn,
// :set, a greedy :gen equal to `flywheel generate --temperature 0`, :stats, :metrics, a bad command,
// :quit; the exit code is 0 for a clean script and non-zero when a command failed; no prompt
// decorations without a terminal.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <fstream>
#include <regex>
#include <string>

#include "tests/console/console_process.hpp"

namespace fw::test {
namespace {

std::vector<std::string> console_args() { return {flywheel_binary(), "console", "--config", default_config()}; }

/// The text between the end of `after` and the start of `before` in s (empty when absent).
std::string between(const std::string& s, const std::string& after, const std::string& before) {
  const size_t a = s.find(after);
  if (a == std::string::npos) return {};
  const size_t start = a + after.size();
  const size_t b = s.find(before, start);
  return b == std::string::npos ? std::string() : s.substr(start, b - start);
}

size_t count_of(const std::string& s, const std::string& part) {
  size_t n = 0;
  for (size_t p = s.find(part); p != std::string::npos; p = s.find(part, p + 1)) ++n;
  return n;
}

TEST(console_pipe_test, scripted_session) {
  FW_REQUIRE_CONSOLE();
  const std::string script =
      "What is the capital of France?\n"
      ":set temperature 0\n"
      ":set max_tokens 16\n"
      ":gen The quick brown fox\n"
      ":stats\n"
      ":metrics\n"
      ":frobnicate\n"
      ":get temperature\n"
      ":quit\n"
      "this line is never read\n";
  const auto r = run_process(console_args(), script);
  ASSERT_FALSE(r.timed_out) << r.out << r.err;
  EXPECT_EQ(r.exit_code, 1) << "a failed command makes the exit code non-zero\n" << r.err;

  // Loading progress and the banner go to stderr without a terminal; no prompt anywhere.
  EXPECT_NE(r.err.find("loading model"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(":help"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("> "), std::string::npos) << r.out;

  // The chat turn answered with some text before the first command's output.
  const size_t set_pos = r.out.find("sampling.temperature = 0.0\n");
  ASSERT_NE(set_pos, std::string::npos) << r.out;
  const std::string answer = r.out.substr(0, set_pos);
  EXPECT_NE(answer.find_first_not_of(" \n"), std::string::npos) << "empty chat answer";
  EXPECT_NE(r.out.find("sampling.max_tokens = 16\n"), std::string::npos) << r.out;

  // The greedy :gen equals `flywheel generate --temperature 0` for the same prompt.
  const std::string gen = between(r.out, "sampling.max_tokens = 16\n", "last turn:");
  const auto g = run_process({flywheel_binary(), "generate", "--config", default_config(), "--temperature", "0",
                              "--max-tokens", "16", "--prompt", "The quick brown fox", "--json"},
                             "");
  ASSERT_EQ(g.exit_code, 0) << g.err;
  const auto j = nlohmann::json::parse(g.out);
  EXPECT_EQ(gen, j["text"].get<std::string>() + "\n");
  EXPECT_EQ(j["tokens"].size(), 16u);

  // :stats: the :gen turn with its TTFT; totals over both requests.
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex("last turn: (\\d+) prompt tokens, 16 generated, TTFT ([0-9.]+) ms")))
      << r.out;
  EXPECT_EQ(std::stoul(m[1]), j["prompt_tokens"].size());
  EXPECT_GT(std::stod(m[2]), 0.0);
  EXPECT_NE(r.out.find("totals: 2 requests (0 cancelled, 0 failed)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("runtime: "), std::string::npos) << r.out;

  // :metrics: both requests counted.
  EXPECT_TRUE(std::regex_search(r.out, std::regex("\nflywheel:time_to_first_token_seconds_count\\{[^}]*\\} 2\n"))) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("\nflywheel:e2e_request_latency_seconds_count\\{[^}]*\\} 2\n"))) << r.out;
  double successes = 0;  // the chat turn ends with stop or length, the :gen with length
  const std::regex success("\nflywheel:request_success_total\\{[^}]*finished_reason=\"(stop|length)\"\\} (\\d+)");
  for (auto it = std::sregex_iterator(r.out.begin(), r.out.end(), success); it != std::sregex_iterator(); ++it)
    successes += std::stod((*it)[2]);
  EXPECT_EQ(successes, 2) << r.out;
  EXPECT_NE(r.out.find("# TYPE flywheel:inter_token_latency_seconds histogram\n"), std::string::npos);
  EXPECT_NE(r.out.find("# TYPE flywheel:kv_cache_usage_perc gauge\n"), std::string::npos);

  // The bad command: one error line, and the console carried on (:get answered, :quit stopped it).
  EXPECT_EQ(count_of(r.err, "error:"), 1u) << r.err;
  EXPECT_NE(r.err.find("error: unknown command ':frobnicate'"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("\nsampling.temperature = 0.0\n"), std::string::npos) << r.out;
}

TEST(console_pipe_test, clean_script_exits_zero) {
  FW_REQUIRE_CONSOLE();
  const auto r = run_process(console_args(), ":set max_tokens 4\n:gen Hello\n:reset\n:help\n:get\n:kernels\n:devices\n");
  ASSERT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 0) << r.err;  // end of input quits like :quit
  EXPECT_EQ(r.err.find("error:"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("conversation cleared"), std::string::npos);
  for (const char* cmd : {":reset", ":gen TEXT", ":set KEY VALUE", ":get [KEY]", ":stats", ":metrics", ":kernels",
                          ":config", ":devices", ":plugins", ":load PATH", ":unload NAME", ":reload NAME", ":quit"})
    EXPECT_NE(r.out.find(std::string("  ") + cmd + " "), std::string::npos) << ":help misses " << cmd;
  EXPECT_NE(r.out.find("speculative.k = "), std::string::npos);  // :get lists speculative settings
  EXPECT_NE(r.out.find("kernel paths on the cpu backend:\n  q4_1 "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("in use: cpu backend"), std::string::npos) << r.out;
}

TEST(console_pipe_test, each_failure_is_one_error_line_and_a_nonzero_exit) {
  FW_REQUIRE_CONSOLE();
  const auto r = run_process(console_args(),
                             ":plugins\n:load /tmp/x.so\n:set temperature abc\n:set ctx_size 8\n:set bogus 1\n"
                             ":gen\n:reset now\n:get temperature\n");
  ASSERT_FALSE(r.timed_out);
  EXPECT_NE(r.exit_code, 0);
  // :plugins answers (nothing loaded); loading a file that does not exist is one clear error.
  EXPECT_NE(r.out.find("no plugins loaded"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("error: plugins: plugin 'x' (/tmp/x.so)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("error: sampling.temperature"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("error: model.ctx_size cannot be changed"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("error: usage: :gen TEXT"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("error: :reset takes no arguments"), std::string::npos) << r.err;
  EXPECT_EQ(count_of(r.err, "error:"), 6u) << r.err;
  EXPECT_NE(r.out.find("sampling.temperature = 0.7"), std::string::npos) << "a bad :set changed nothing\n" << r.out;
}

TEST(console_pipe_test, bad_config_is_reported_before_loading) {
  FW_REQUIRE_CONSOLE();
  const auto r = run_process({flywheel_binary(), "console", "--config", "/nonexistent/flywheel.toml"}, "");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("console: "), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("loading model"), std::string::npos) << r.err;
}

TEST(console_pipe_test, a_drill_replays_the_heat_ramp_and_health_shows_every_transition) {
  // The shipped heat-ramp drill on the prefill/decode pair, at 20x, then a greedy answer that
  // must equal the undisturbed one; a missing trace file and a bad one are refused by name.
  FW_REQUIRE_CONSOLE();
  const std::string cfg = std::string(FW_SOURCE_DIR) + "/conf/examples/pd_two_cpu_devices.toml";
  const std::string drill = std::string(FW_SOURCE_DIR) + "/conf/drills/heat_ramp.csv";
  const std::string bad = ::testing::TempDir() + "/fw_bad_drill.csv";
  { std::ofstream(bad) << "0,prefill,temperature_c,60\n1,prefill,heat,3\n"; }
  const std::string prompt = "The history of the printing press begins";
  const std::string script = ":set temperature 0\n:set max_tokens 16\n:drill " + drill + " 20\n:gen " + prompt +
                             "\n:health\n:drill /nonexistent/trace.csv\n:drill " + bad + "\n:quit\n";
  const auto r = run_process({flywheel_binary(), "console", "--config", cfg}, script);
  ASSERT_FALSE(r.timed_out) << r.out << r.err;
  EXPECT_EQ(r.exit_code, 1) << "the refused traces fail the script\n" << r.err;
  EXPECT_NE(r.out.find("drill: 28 samples over 13.0 s, played at 20x"), std::string::npos) << r.out;
  for (const char* t : {"t=3.0s healthy -> link-degraded: prefill at 80 C", "t=7.0s link-degraded -> co-located: sustained",
                        "t=10.0s co-located -> link-degraded: recovered", "t=13.0s link-degraded -> healthy: recovered"})
    EXPECT_NE(r.out.find(t), std::string::npos) << t << "\n" << r.out;
  EXPECT_NE(r.out.find("workers: prefill running, fallback running, transfer running, decode running"), std::string::npos)
      << r.out;
  EXPECT_NE(r.err.find("cannot read telemetry trace /nonexistent/trace.csv"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("fw_bad_drill.csv:2: unknown metric 'heat'"), std::string::npos) << r.err;
  const auto g = run_process({flywheel_binary(), "generate", "--config", default_config(), "--temperature", "0",
                              "--max-tokens", "16", "--prompt", prompt, "--json"},
                             "");
  ASSERT_EQ(g.exit_code, 0) << g.err;
  const auto j = nlohmann::json::parse(g.out);
  EXPECT_NE(r.out.find(j["text"].get<std::string>()), std::string::npos) << "the drill must not change greedy output\n"
                                                                           << r.out;
}

}  // namespace
}  // namespace fw::test

namespace fw::test {
namespace {

// The console on the speculative plugin config: the runtime decodes with the n-gram draft loaded
// as a plugin, greedy output equals plain `generate`, :stats shows the acceptance, and the
// plugin commands list, reload and refuse a bad file.
TEST(console_pipe_test, plugins_and_speculation) {
  FW_REQUIRE_CONSOLE();
  const std::string cfg = std::string(FW_SOURCE_DIR) + "/conf/examples/speculative_plugin.toml";
  const std::string prompt = "Copy: the cat sat on the mat. the cat sat on the mat. the cat sat";
  const std::string script = ":plugins\n:set max_tokens 24\n:gen " + prompt +
                             "\n:stats\n:reload draft_ngram\n:plugins\n:load /etc/passwd\n:quit\n";
  const auto r = run_process({flywheel_binary(), "console", "--config", cfg}, script);
  ASSERT_FALSE(r.timed_out) << r.out << r.err;
  EXPECT_EQ(r.exit_code, 1) << "the bad :load fails the script\n" << r.err;
  EXPECT_NE(r.out.find("draft_ngram draft_model 0.1.0"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("reloaded draft_ngram"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("error: plugins: plugin 'passwd' (/etc/passwd): not a shared library"), std::string::npos) << r.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex("speculation: draft draft_ngram, (\\d+) drafted, (\\d+) accepted")))
      << r.out;
  EXPECT_GT(std::stoul(m[1]), 0u);
  // The draft actor's time (the plugin draft shares the target's threads: nothing drafted ahead).
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex("draft actor: (\\d+) ms drafting waited for; 0 ms drafted ahead")))
      << r.out;

  const auto g = run_process({flywheel_binary(), "generate", "--config", default_config(), "--temperature", "0",
                              "--max-tokens", "24", "--prompt", prompt, "--json"},
                             "");
  ASSERT_EQ(g.exit_code, 0) << g.err;
  const auto j = nlohmann::json::parse(g.out);
  EXPECT_EQ(between(r.out, "sampling.max_tokens = 24\n", "last turn:"), j["text"].get<std::string>() + "\n")
      << "speculative decoding in the runtime must not change greedy output";
}

}  // namespace
}  // namespace fw::test

namespace fw::test {
namespace {

// The console on the physical prefill/decode example: the prompt is prefilled on device 0 and
// decoded on device 1 after a KV transfer, and the greedy output equals plain `generate` on the
// default (one-device) config; :devices shows which role runs where, :stats the transfer.
TEST(console_pipe_test, physical_prefill_decode_separation) {
  FW_REQUIRE_CONSOLE();
  const std::string cfg = std::string(FW_SOURCE_DIR) + "/conf/examples/pd_two_cpu_devices.toml";
  const std::string prompt = "The history of the printing press begins";
  const std::string script = ":set temperature 0\n:set max_tokens 20\n:gen " + prompt + "\n:devices\n:stats\n:quit\n";
  const auto r = run_process({flywheel_binary(), "console", "--config", cfg}, script);
  ASSERT_FALSE(r.timed_out) << r.out << r.err;
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("\nprefill: cpu backend, 1 thread( on core 0)?, KV pool \\d+ blocks")))
      << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("\ndecode:  cpu backend, 1 thread( on core 1)?, KV pool \\d+ blocks")))
      << r.out;
  EXPECT_NE(r.out.find("role prefill, threads 1, cores 0"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("prefill/decode: 1 requests via the prefill device, 0 co-located; 1 KV transfers"),
            std::string::npos)
      << r.out;
  const auto g = run_process({flywheel_binary(), "generate", "--config", default_config(), "--temperature", "0",
                              "--max-tokens", "20", "--prompt", prompt, "--json"},
                             "");
  ASSERT_EQ(g.exit_code, 0) << g.err;
  const auto j = nlohmann::json::parse(g.out);
  EXPECT_EQ(between(r.out, "sampling.max_tokens = 20\n", "configured devices"), j["text"].get<std::string>() + "\n")
      << "moving the KV between devices must not change greedy output";
}

}  // namespace
}  // namespace fw::test

namespace fw::test {
namespace {

// The console on the offload example: a long answer moves to the offload device after 256
// generated tokens and finishes there with the same text as on the default one-device config.
TEST(console_pipe_test, a_long_answer_offloaded_mid_generation_is_unchanged) {
  FW_REQUIRE_CONSOLE();
  const std::string script =
      ":set temperature 0\n:set max_tokens 320\n"
      "Write a long, detailed story about a dragon who learns to paint. Use many paragraphs.\n:stats\n:quit\n";
  const auto off = run_process(
      {flywheel_binary(), "console", "--config", std::string(FW_SOURCE_DIR) + "/conf/examples/pd_offload.toml"}, script);
  ASSERT_FALSE(off.timed_out) << off.out << off.err;
  EXPECT_EQ(off.exit_code, 0) << off.err;
  EXPECT_NE(off.out.find("offload: 1 sequences moved mid-generation, 0 decoding there now, 0 moves refused"),
            std::string::npos)
      << off.out;
  const auto one = run_process(console_args(), script);
  ASSERT_EQ(one.exit_code, 0) << one.err;
  const std::string a = between(off.out, "sampling.max_tokens = 320\n", "last turn:");
  EXPECT_GT(a.size(), 800u) << a;
  EXPECT_EQ(a, between(one.out, "sampling.max_tokens = 320\n", "last turn:"));
}

}  // namespace
}  // namespace fw::test

namespace fw::test {
namespace {

// `flywheel generate --json-schema`: the answer is JSON the schema admits (from the text or
// @FILE), properties in the schema's order; a schema it cannot honour exits 2 naming the keyword.
TEST(generate_cli, a_json_schema_shapes_the_answer) {
  const std::string schema = R"({"type":"object","properties":{"city":{"type":"string"},"people":{"type":"integer"},)"
                             R"("sights":{"type":"array","items":{"type":"string"},"maxItems":3}},)"
                             R"("required":["city","people","sights"],"additionalProperties":false})";
  const std::string file = ::testing::TempDir() + "fw_generate_schema.json";
  std::ofstream(file) << schema;
  const std::string prompt = "Describe Paris as JSON.";
  for (const std::string& arg : {schema, "@" + file}) {
    const auto g = run_process({flywheel_binary(), "generate", "--config", default_config(), "--temperature", "0",
                                "--max-tokens", "200", "--chat", "--prompt", prompt, "--json-schema", arg, "--json"},
                               "");
    ASSERT_EQ(g.exit_code, 0) << g.err;
    const auto out = nlohmann::json::parse(g.out);
    EXPECT_EQ(out["finish_reason"], "stop") << g.out;
    const auto answer = nlohmann::ordered_json::parse(out["text"].get<std::string>());
    std::vector<std::string> keys;
    for (const auto& [k, v] : answer.items()) keys.push_back(k);
    EXPECT_EQ(keys, (std::vector<std::string>{"city", "people", "sights"})) << answer.dump();
    EXPECT_TRUE(answer["city"].is_string() && answer["people"].is_number_integer()) << answer.dump();
    EXPECT_LE(answer["sights"].size(), 3u) << answer.dump();
  }
  const auto bad = run_process({flywheel_binary(), "generate", "--config", default_config(), "--prompt", prompt,
                                "--json-schema", R"({"type":"string","not":{"const":"a"}})"},
                               "");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("keyword \"not\" is not supported"), std::string::npos) << bad.err;
  const auto missing = run_process({flywheel_binary(), "generate", "--config", default_config(), "--prompt", prompt,
                                    "--json-schema", "@/nonexistent/schema.json"},
                                   "");
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("cannot read /nonexistent/schema.json"), std::string::npos) << missing.err;
}

// `flywheel generate --grammar`: the answer is a sentence of the GBNF grammar (text or @FILE),
// sampled too; a grammar with an undefined rule exits 2 naming it and where.
TEST(generate_cli, a_gbnf_grammar_shapes_the_answer) {
  const std::string grammar = "root ::= verdict \" because \" reason \".\"\n"
                              "verdict ::= \"yes\" | \"no\"\n"
                              "reason ::= [a-z]{1,12} (\" \" [a-z]{1,12}){0,5}\n";
  const std::string file = ::testing::TempDir() + "fw_generate_grammar.gbnf";
  std::ofstream(file) << grammar;
  const std::regex sentence("(yes|no) because [a-z]{1,12}( [a-z]{1,12}){0,5}\\.");
  for (const std::string& arg : {grammar, "@" + file}) {
    for (const char* temperature : {"0", "1.0"}) {
      const auto g = run_process({flywheel_binary(), "generate", "--config", default_config(), "--temperature",
                                  temperature, "--seed", "3", "--max-tokens", "120", "--chat", "--prompt",
                                  "Is Paris in France?", "--grammar", arg, "--json"},
                                 "");
      ASSERT_EQ(g.exit_code, 0) << g.err;
      const auto out = nlohmann::json::parse(g.out);
      EXPECT_EQ(out["finish_reason"], "stop") << g.out;
      EXPECT_TRUE(std::regex_match(out["text"].get<std::string>(), sentence)) << g.out;
    }
  }
  const auto bad = run_process({flywheel_binary(), "generate", "--config", default_config(), "--prompt", "x",
                                "--grammar", "root ::= verdict"},
                               "");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("line 1, column 10: the rule verdict is used but not defined"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace fw::test
