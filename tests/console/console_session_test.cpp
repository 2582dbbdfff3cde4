// console_session in-process on the real model and a real engine: greedy :gen equals the
// sequential generator, the chat conversation grows and resets, an interrupt cancels the
// generation (partial answer kept, metrics count the cancel), generation errors and bad commands
// are one "error:" line each, and the engine's metrics match what the session saw.
#include "tools/console/console_session.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <sstream>

#include "runtime/device/cpu/cpu_backend.hpp"
#include "runtime/step/generator.hpp"

namespace fw::console {
namespace {

std::string model_file() { return std::string(FW_SOURCE_DIR) + "/models/SmolLM2-135M-Instruct.Q4_1.gguf"; }

/// The value of the first sample line of render() that matches `series` (a regex up to the value).
double sample(const std::string& text, const std::string& series) {
  std::smatch m;
  if (!std::regex_search(text, m, std::regex("\n" + series + " ([^\n]+)\n"))) return -1;
  return std::stod(m[1]);
}

class console_session_test : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!std::filesystem::exists(model_file())) return;
    auto m = model::load(model_file());
    ASSERT_TRUE(m) << m.err().what();
    model_ = *m;
    cpu_backend_options o;
    o.threads = 2;
    o.kv_tokens = 4096;
    actors::engine_limits limits;
    limits.n_ctx = 1024, limits.max_batch = 4, limits.max_queue = 16, limits.prefill_chunk = 256;
    auto e = actors::engine::start(model_, std::make_unique<cpu_backend>(model_->config(), model_->weights(), o), limits);
    ASSERT_TRUE(e) << e.err().what();
    engine_ = std::move(*e);
  }
  static void TearDownTestSuite() {
    engine_.reset();
    model_.reset();
  }

  void SetUp() override {
    if (!engine_) GTEST_SKIP() << "real model not found at " << model_file() << " (run scripts/setup.sh)";
    auto c = config::from_file(std::string(FW_SOURCE_DIR) + "/conf/default.toml");
    ASSERT_TRUE(c) << c.err().message;
    cfg_ = *c;
  }

  console_session make(console_options o = {}) { return console_session(*engine_, cfg_, out_, err_, std::move(o)); }

  static inline std::shared_ptr<const model> model_;
  static inline std::unique_ptr<actors::engine> engine_;
  config cfg_;
  std::ostringstream out_, err_;
};

TEST_F(console_session_test, greedy_gen_equals_the_sequential_generator) {
  auto s = make();
  EXPECT_EQ(s.execute(":set temperature 0"), console_session::outcome::ok);
  EXPECT_EQ(s.execute(":set max_tokens 12"), console_session::outcome::ok);
  out_.str("");
  const std::string before = engine_->render_metrics();
  EXPECT_EQ(s.execute(":gen Once upon a time"), console_session::outcome::ok) << err_.str();

  cpu_backend_options o;
  o.threads = 2;
  o.kv_tokens = 256;
  cpu_backend be(model_->config(), model_->weights(), o);
  generator gen(*model_, be, generator_options{256, 512, false});
  const auto prompt = model_->vocab().encode("Once upon a time", true, true);
  auto ref = gen.run(prompt, sampling_params::from_section(cfg_.sampling), [](std::string_view) { return true; });
  ASSERT_TRUE(ref) << ref.err().what();
  EXPECT_EQ(out_.str(), ref->text + "\n");
  EXPECT_TRUE(s.conversation().empty()) << ":gen is not part of the conversation";

  // The turn's statistics and the engine's metrics agree with what was generated.
  const auto& t = s.stats().last();
  EXPECT_EQ(t.prompt_tokens, prompt.size());
  EXPECT_EQ(t.generated_tokens, ref->tokens.size());
  EXPECT_GT(t.ttft_ms, 0.0);
  EXPECT_GT(t.tpot_ms, 0.0);
  const std::string after = engine_->render_metrics();
  const std::string gen_tokens = "flywheel:generation_tokens_total\\{[^}]*\\}";
  const std::string prompt_tokens = "flywheel:prompt_tokens_total\\{[^}]*\\}";
  const std::string ttft_count = "flywheel:time_to_first_token_seconds_count\\{[^}]*\\}";
  const std::string itl_count = "flywheel:inter_token_latency_seconds_count\\{[^}]*\\}";
  EXPECT_DOUBLE_EQ(sample(after, gen_tokens) - sample(before, gen_tokens), ref->tokens.size());
  EXPECT_DOUBLE_EQ(sample(after, prompt_tokens) - sample(before, prompt_tokens), prompt.size());
  EXPECT_DOUBLE_EQ(sample(after, ttft_count) - sample(before, ttft_count), 1);
  EXPECT_DOUBLE_EQ(sample(after, itl_count) - sample(before, itl_count), ref->tokens.size() - 1);
  EXPECT_GE(sample(after, "flywheel:kv_cache_usage_perc\\{[^}]*\\}"), 0.0);
  EXPECT_EQ(s.failed_count(), 0u);
}

TEST_F(console_session_test, chat_keeps_the_conversation_until_reset) {
  auto s = make();
  ASSERT_TRUE(cfg_.set("max_tokens", "24"));
  EXPECT_EQ(s.execute("Hi! My name is Ada."), console_session::outcome::ok) << err_.str();
  ASSERT_EQ(s.conversation().size(), 2u);
  EXPECT_EQ(s.conversation()[0].role, "user");
  EXPECT_EQ(s.conversation()[0].content, "Hi! My name is Ada.");
  EXPECT_EQ(s.conversation()[1].role, "assistant");
  EXPECT_FALSE(s.conversation()[1].content.empty());
  EXPECT_EQ(out_.str(), s.conversation()[1].content + "\n");
  const uint32_t first_prompt = s.stats().last().prompt_tokens;

  EXPECT_EQ(s.execute("What is my name?"), console_session::outcome::ok) << err_.str();
  ASSERT_EQ(s.conversation().size(), 4u);
  EXPECT_GT(s.stats().last().prompt_tokens, first_prompt + s.stats().last().generated_tokens / 2)
      << "the second turn's prompt holds the whole conversation";

  EXPECT_EQ(s.execute(":reset"), console_session::outcome::ok);
  EXPECT_TRUE(s.conversation().empty());
  EXPECT_EQ(s.failed_count(), 0u);
}

TEST_F(console_session_test, format_shapes_every_answer_until_turned_off) {
  using o = console_session::outcome;
  auto s = make();
  ASSERT_TRUE(cfg_.set("max_tokens", "48"));
  ASSERT_TRUE(cfg_.set("temperature", "0"));
  EXPECT_EQ(s.execute(":format"), o::ok);
  EXPECT_EQ(out_.str(), "answers: plain text\n");

  EXPECT_EQ(s.execute(":format choice yes|no"), o::ok) << err_.str();
  EXPECT_EQ(s.execute("Is the water of the sea salty? Answer yes or no."), o::ok) << err_.str();
  std::string a = s.conversation().back().content;
  EXPECT_TRUE(a == "yes" || a == "no") << a;

  EXPECT_EQ(s.execute(":format regex [0-9]{2,4}"), o::ok) << err_.str();
  EXPECT_EQ(s.execute("In which year did the Second World War end?"), o::ok) << err_.str();
  a = s.conversation().back().content;
  EXPECT_TRUE(std::regex_match(a, std::regex("[0-9]{2,4}"))) << a;

  // Sampled, under a schema: the answer is JSON of the schema.
  ASSERT_TRUE(cfg_.set("temperature", "0.8"));
  EXPECT_EQ(s.execute(R"(:format schema {"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"],)"
                      R"("additionalProperties":false})"),
            o::ok)
      << err_.str();
  EXPECT_EQ(s.execute("Is the sky blue? Answer in JSON."), o::ok) << err_.str();
  a = s.conversation().back().content;
  EXPECT_TRUE(std::regex_match(a, std::regex(R"(\{\s*"ok"\s*:\s*(true|false)\s*\})"))) << a;

  // A bad format is one error line and keeps the one before.
  const size_t failed = s.failed_count();
  EXPECT_EQ(s.execute(":format regex (ab"), o::failed);
  EXPECT_EQ(s.failed_count(), failed + 1);
  EXPECT_NE(err_.str().find("error: "), std::string::npos);
  out_.str("");
  EXPECT_EQ(s.execute(":format"), o::ok);
  EXPECT_EQ(out_.str().rfind("answers: JSON of the schema", 0), 0u) << out_.str();

  ASSERT_TRUE(cfg_.set("temperature", "0"));
  EXPECT_EQ(s.execute(":format off"), o::ok);
  EXPECT_EQ(s.execute("Say hello in three words."), o::ok) << err_.str();
  a = s.conversation().back().content;
  EXPECT_FALSE(a.empty());
  EXPECT_NE(a.front(), '{') << "plain text again: " << a;
}

TEST_F(console_session_test, interrupt_cancels_the_generation_only) {
  int polls = 0;
  console_options o;
  o.interrupted = [&] { return ++polls == 3; };  // a Ctrl-C shortly after the start
  auto s = make(std::move(o));
  ASSERT_TRUE(cfg_.set("max_tokens", "400"));
  const std::string before = engine_->render_metrics();
  EXPECT_EQ(s.execute("Tell me a very long story about the sea."), console_session::outcome::ok) << err_.str();
  EXPECT_TRUE(s.stats().last().cancelled);
  EXPECT_EQ(s.stats().last().finish, "cancelled");
  EXPECT_LT(s.stats().last().generated_tokens, 400u);
  EXPECT_NE(err_.str().find("[generation stopped: "), std::string::npos) << err_.str();
  EXPECT_EQ(err_.str().find("error:"), std::string::npos) << err_.str();
  ASSERT_EQ(s.conversation().size(), 2u) << "the partial answer stays in the conversation";
  EXPECT_EQ(s.failed_count(), 0u);
  const std::string cancelled = "flywheel:request_failure_total\\{[^}]*reason=\"cancelled\"\\}";
  EXPECT_DOUBLE_EQ(sample(engine_->render_metrics(), cancelled) - sample(before, cancelled), 1);

  // The console goes on.
  ASSERT_TRUE(cfg_.set("max_tokens", "4"));
  EXPECT_EQ(s.execute(":gen Hello"), console_session::outcome::ok);
  EXPECT_FALSE(s.stats().last().cancelled);
}

TEST_F(console_session_test, generation_errors_are_one_error_line) {
  auto s = make();
  std::string huge;
  for (int i = 0; i < 1500; ++i) huge += "word ";  // longer than the 1024-token context
  const std::string before = engine_->render_metrics();
  EXPECT_EQ(s.execute(":gen " + huge), console_session::outcome::failed);
  EXPECT_EQ(s.failed_count(), 1u);
  EXPECT_TRUE(err_.str().starts_with("error: generation failed: ")) << err_.str();
  EXPECT_EQ(err_.str().find('\n'), err_.str().size() - 1) << "one line: " << err_.str();
  EXPECT_TRUE(s.stats().last().failed);
  const std::string failures = "flywheel:request_failure_total\\{[^}]*reason=\"context_overflow\"\\}";
  EXPECT_DOUBLE_EQ(sample(engine_->render_metrics(), failures) - std::max(0.0, sample(before, failures)), 1);
  // A failed chat turn leaves the conversation as it was.
  EXPECT_EQ(s.execute(huge), console_session::outcome::failed);
  EXPECT_TRUE(s.conversation().empty());
}

TEST_F(console_session_test, commands_and_their_errors) {
  auto s = make();
  using o = console_session::outcome;
  EXPECT_EQ(s.execute(""), o::ok);
  EXPECT_EQ(s.execute("   "), o::ok);
  EXPECT_EQ(s.execute(":quit"), o::quit);
  EXPECT_EQ(s.execute(":q"), o::quit);
  EXPECT_EQ(s.execute(":set top_k 7"), o::ok);
  EXPECT_EQ(cfg_.sampling.top_k, 7);
  EXPECT_EQ(s.execute(":set sampling.seed 42"), o::ok);
  EXPECT_EQ(cfg_.sampling.seed, 42u);
  EXPECT_EQ(s.execute(":set draft ngram"), o::ok);
  EXPECT_EQ(cfg_.speculative.draft, draft_kind::ngram);
  EXPECT_EQ(s.execute(":get top_k"), o::ok);
  EXPECT_EQ(s.execute(":get model.path"), o::ok);
  EXPECT_NE(out_.str().find("sampling.top_k = 7\n"), std::string::npos) << out_.str();
  EXPECT_NE(out_.str().find("speculative.draft = \"ngram\"\n"), std::string::npos) << out_.str();
  EXPECT_NE(out_.str().find("note: the runtime's draft is chosen at start"), std::string::npos) << out_.str();
  EXPECT_NE(out_.str().find("model.path = \"models/SmolLM2-135M-Instruct.Q4_1.gguf\"\n"), std::string::npos);
  EXPECT_EQ(s.execute(":config"), o::ok);
  EXPECT_NE(out_.str().find("top_k = 7"), std::string::npos) << ":config shows :set changes";
  EXPECT_EQ(s.failed_count(), 0u);
  EXPECT_EQ(err_.str(), "");

  EXPECT_EQ(s.execute(":set top_k -3"), o::failed);
  EXPECT_EQ(cfg_.sampling.top_k, 7) << "a bad value changes nothing";
  EXPECT_EQ(s.execute(":set top_k"), o::failed);
  EXPECT_EQ(s.execute(":set model.path other.gguf"), o::failed);
  EXPECT_EQ(s.execute(":get nope"), o::failed);
  EXPECT_EQ(s.execute(":stat"), o::failed);
  EXPECT_EQ(s.execute(":reload draft_ngram"), o::failed);
  EXPECT_EQ(s.execute(":unload"), o::failed);
  EXPECT_EQ(s.execute(":metrics please"), o::failed);
  EXPECT_EQ(s.failed_count(), 8u);
  const std::string err = err_.str();
  size_t lines = 0;
  for (size_t p = 0; (p = err.find("\n", p)) != std::string::npos; ++p) ++lines;
  EXPECT_EQ(lines, 8u) << err;
  for (size_t p = 0; p < err.size(); p = err.find('\n', p) + 1) EXPECT_EQ(err.compare(p, 7, "error: "), 0) << err;
  EXPECT_NE(err.find("error: unknown command ':stat' (did you mean ':stats'?)"), std::string::npos) << err;
  EXPECT_NE(err.find("error: plugins: this console has no plugin host\n"), std::string::npos) << err;
  EXPECT_NE(err.find("error: usage: :unload NAME\n"), std::string::npos) << err;
}

}  // namespace
}  // namespace fw::console
