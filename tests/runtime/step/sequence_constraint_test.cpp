// sequence under a constraint, with fabricated logits. JSON mode (sampling_params::json_object):
// whatever the logits prefer, every token continues a JSON object, end-of-generation waits for
// the object to close, and the answer ends as soon as it does. guided_choice (choices): the
// answer is exactly one of the strings.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <optional>
#include <random>
#include <string>

#include <nlohmann/json.hpp>

#include "runtime/sample/gbnf_grammar.hpp"
#include "runtime/sample/grammar_recognizer.hpp"
#include "runtime/sample/json_recognizer.hpp"
#include "runtime/sample/json_schema.hpp"
#include "runtime/sample/regex_grammar.hpp"
#include "runtime/sample/sampler.hpp"
#include "runtime/step/sequence.hpp"
#include "tests/support/sampling_presets.hpp"
#include "tests/support/test_models.hpp"

namespace fw {
namespace {

class sequence_constraint_test : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    tiny_model_spec spec;
    spec.seed = 43;
    model_ = test::load_tiny(spec, "sequence_constraint");
  }
  static void TearDownTestSuite() { model_.reset(); }

  static int32_t id_of(const std::string& piece) {
    const auto& v = model_->vocab();
    for (int32_t t = 0; t < v.n_vocab(); ++t)
      if (!v.is_control(t) && v.token_to_piece(t) == piece) return t;
    return -1;
  }
  static std::vector<float> favouring(std::initializer_list<std::pair<int32_t, float>> ranks) {
    std::vector<float> l(model_->config().n_vocab, 0.0f);
    for (auto [t, v] : ranks) l[static_cast<size_t>(t)] = v;
    return l;
  }

  static inline std::shared_ptr<const model> model_;
};

TEST_F(sequence_constraint_test, the_best_token_that_continues_the_object_is_taken_and_the_object_ends_it) {
  const auto& v = model_->vocab();
  const int32_t x = id_of("x"), open = id_of("{"), close = id_of("}"), eos = tiny_model_eot_id;
  ASSERT_TRUE(x >= 0 && open >= 0 && close >= 0);
  sampling_params params = test::greedy(20);
  params.ignore_eos = false;
  params.json_object = true;
  sequence s(1, {x}, params, static_cast<int32_t>(model_->config().n_vocab), 20);
  // "x" and end-of-generation are preferred; neither can start an object.
  auto o = s.advance(favouring({{x, 9.0f}, {eos, 8.0f}, {close, 7.0f}, {open, 1.0f}}), v);
  EXPECT_EQ(o.token, open);
  EXPECT_FALSE(s.finished());
  // End-of-generation cannot end an open object; "}" closes it and ends the answer.
  o = s.advance(favouring({{eos, 9.0f}, {x, 8.0f}, {close, 1.0f}}), v);
  EXPECT_EQ(o.token, close);
  EXPECT_TRUE(o.finished);
  EXPECT_EQ(o.finish_reason, "stop");
  EXPECT_EQ(std::string(v.token_to_piece(open)) + v.token_to_piece(close), "{}");
}

TEST_F(sequence_constraint_test, random_logits_give_json_prefixes_and_closed_objects) {
  const auto& v = model_->vocab();
  const size_t nv = model_->config().n_vocab;
  const int32_t close = id_of("}"), bracket = id_of("]"), quote = id_of("\""), eos = tiny_model_eot_id;
  std::mt19937 rng(7);
  std::normal_distribution<float> noise(0.0f, 2.0f);
  int closed = 0;
  for (int run = 0; run < 20; ++run) {
    sampling_params params = run % 2 ? test::unfiltered(1.0f, 120) : test::greedy(120);
    params.ignore_eos = false;
    params.json_object = true;
    params.seed = 100 + static_cast<uint64_t>(run);
    sequence s(1, {quote}, params, static_cast<int32_t>(nv), 120);
    std::string text;
    while (!s.finished()) {
      std::vector<float> l(nv);
      for (auto& f : l) f = noise(rng);
      l[static_cast<size_t>(close)] += 3.0f;  // lean towards closing, so that some runs end
      l[static_cast<size_t>(bracket)] += 3.0f;
      l[static_cast<size_t>(eos)] += 5.0f;
      const auto o = s.advance(l, v);
      if (o.token >= 0) text += v.token_to_piece(o.token);
    }
    json_recognizer r;
    ASSERT_TRUE(r.feed(text)) << "run " << run << ": " << text;
    if (s.generated().size() < 120) {
      EXPECT_TRUE(r.complete()) << "run " << run << " ended before the object closed: " << text;
    }
    closed += r.complete();
  }
  EXPECT_GT(closed, 0);
}

TEST_F(sequence_constraint_test, under_a_json_schema_random_logits_write_what_the_schema_admits) {
  const auto& v = model_->vocab();
  const size_t nv = model_->config().n_vocab;
  const std::string schema = R"({"type":"object","properties":{"ok":{"type":"boolean"},
      "kind":{"enum":["cat","dog"]},"n":{"type":"integer"},"tags":{"type":"array","items":{"type":"string",
      "maxLength":3},"maxItems":2}},"required":["ok","kind","n","tags"],"additionalProperties":false})";
  const auto g = json_schema_grammar(schema);
  ASSERT_TRUE(g);
  std::mt19937 rng(11);
  std::normal_distribution<float> noise(0.0f, 2.0f);
  int whole = 0;
  for (int run = 0; run < 20; ++run) {
    sampling_params params = run % 2 ? test::unfiltered(1.0f, 150) : test::greedy(150);
    params.ignore_eos = true;  // a constraint still ends the answer when its text can take nothing more
    params.json_schema = schema;
    params.seed = 300 + static_cast<uint64_t>(run);
    ASSERT_TRUE(params.validate());
    sequence s(1, {id_of("x")}, params, static_cast<int32_t>(nv), 150);
    std::string text;
    while (!s.finished()) {
      std::vector<float> l(nv);
      for (auto& f : l) f = noise(rng);
      for (const char* closer : {"\"", "]", "}", ","}) l[static_cast<size_t>(id_of(closer))] += 3.0f;
      const auto o = s.advance(l, v);
      if (o.token >= 0) text += v.token_to_piece(o.token);
    }
    grammar_recognizer r(*g);
    ASSERT_TRUE(r.feed(text)) << "run " << run << ": " << text;
    if (s.generated().size() < 150) {
      ASSERT_TRUE(r.done()) << "run " << run << " ended early: " << text;
      const auto j = nlohmann::json::parse(text);
      EXPECT_TRUE(j.at("ok").is_boolean() && j.at("n").is_number_integer()) << text;
      EXPECT_TRUE(j.at("kind") == "cat" || j.at("kind") == "dog") << text;
      EXPECT_LE(j.at("tags").size(), 2u) << text;
      ++whole;
    }
  }
  EXPECT_GT(whole, 10);
  // The answer's first token is the best one that can start the object, whatever is preferred.
  sampling_params params = test::greedy(20);
  params.json_schema = schema;
  sequence s(2, {id_of("x")}, params, static_cast<int32_t>(nv), 20);
  const auto o = s.advance(favouring({{id_of("x"), 9.0f}, {tiny_model_eot_id, 8.0f}, {id_of("["), 7.0f}, {id_of("{"), 1.0f}}), v);
  EXPECT_EQ(o.token, id_of("{"));
}

// Greedy steps under a constraint take the most likely token when the constraint admits it and
// walk the vocabulary only otherwise (sequence::advance). Against a brute-force oracle that feeds
// every token's text to its own recognizer: the token taken is always the most likely admitted
// one (lowest id on ties; a sampler of the same parameters with every refused token banned says
// which, penalties and logit_bias included), end-of-generation only where the answer may end (or
// nothing else is left), for JSON mode, a JSON schema, a regex, a GBNF grammar and guided_choice;
// the logits make both cases frequent (a boosted admitted token on top, or noise whose best token
// is refused).
TEST_F(sequence_constraint_test, greedy_steps_take_the_most_likely_admitted_token_under_every_constraint) {
  const auto& v = model_->vocab();
  const int32_t nv = static_cast<int32_t>(model_->config().n_vocab);
  const std::string schema = R"({"type":"object","properties":{"ok":{"type":"boolean"},"n":{"type":"integer"}},
      "required":["ok","n"],"additionalProperties":false})";
  const std::string regex = "[a-z]{1,6}( [0-9]{1,3})?";
  const std::string gbnf = "root ::= \"(\" item (\",\" item)* \")\"\nitem ::= [a-c]+ | \"x\"";
  const std::vector<std::string> choices = {"yes", "no", "nope", "not sure"};
  std::mt19937 rng(17);
  std::normal_distribution<float> noise(0.0f, 2.0f);
  std::uniform_real_distribution<float> coin(0.0f, 1.0f);
  int lazy_hits = 0, walks = 0;
  for (int kind = 0; kind < 5; ++kind) {
    for (int run = 0; run < 6; ++run) {
      sampling_params params = test::greedy(60);
      params.ignore_eos = false;
      std::optional<grammar_recognizer> oracle;
      std::optional<json_recognizer> oracle_json;
      switch (kind) {
        case 0: params.json_object = true, oracle_json.emplace(); break;
        case 1: params.json_schema = schema, oracle.emplace(*json_schema_grammar(schema)); break;
        case 2: params.regex = regex, oracle.emplace(*regex_grammar(regex)); break;
        case 3: params.grammar = gbnf, oracle.emplace(*gbnf_grammar(gbnf)); break;
        default: params.choices = choices; break;
      }
      if (run % 2) {  // penalties move the logits by the history: the same for the walk and the shortcut
        params.repeat_penalty = 1.5f;
        params.presence_penalty = 0.7f;
        params.frequency_penalty = 0.4f;
        params.logit_bias_ids = {id_of("x"), id_of("1")};
        params.logit_bias = {5.0f, -3.0f};
      }
      ASSERT_TRUE(params.validate()) << kind;
      sequence s(1, {id_of("x")}, params, nv, 60);
      // The reference: a sampler of the same parameters with every refused token banned.
      sampler reference(params, nv);
      std::vector<int32_t> history = {id_of("x")};
      std::string answer;
      const auto piece_of = [&](int32_t t) { return v.is_control(t) ? std::string() : v.token_to_piece(t); };
      const auto may_end = [&] {
        if (oracle_json) return oracle_json->complete();
        if (oracle) return oracle->can_end();
        return std::find(choices.begin(), choices.end(), answer) != choices.end();
      };
      const auto text_ok = [&](const std::string& p) {
        if (p.empty()) return false;
        if (oracle_json) {
          json_recognizer r = *oracle_json;
          return !oracle_json->complete() && r.feed(p);
        }
        if (oracle) {
          grammar_recognizer r = *oracle;
          return r.feed(p);
        }
        const std::string next = answer + p;
        return std::any_of(choices.begin(), choices.end(),
                           [&](const std::string& c) { return c.compare(0, next.size(), next) == 0 && c.size() >= next.size(); });
      };
      while (!s.finished()) {
        std::vector<bool> allowed(static_cast<size_t>(nv));
        std::vector<int32_t> admitted;
        for (int32_t t = 0; t < nv; ++t) {
          allowed[static_cast<size_t>(t)] = v.is_eog(t) ? may_end() : text_ok(piece_of(t));
          if (allowed[static_cast<size_t>(t)]) admitted.push_back(t);
        }
        if (admitted.empty())  // nothing continues the text: ending is allowed
          for (int32_t t = 0; t < nv; ++t) allowed[static_cast<size_t>(t)] = v.is_eog(t);
        std::vector<float> l(static_cast<size_t>(nv));
        for (auto& f : l) f = noise(rng);
        if (!admitted.empty() && coin(rng) < 0.5f)
          l[static_cast<size_t>(admitted[rng() % admitted.size()])] += 12.0f;
        std::vector<int32_t> refused;
        for (int32_t t = 0; t < nv; ++t)
          if (!allowed[static_cast<size_t>(t)]) refused.push_back(t);
        reference.set_banned({});
        const int32_t best_any = reference.sample(l, history);
        reference.set_banned(refused);
        const int32_t best = reference.sample(l, history);
        ASSERT_TRUE(best >= 0 && allowed[static_cast<size_t>(best)]);
        (allowed[static_cast<size_t>(best_any)] ? lazy_hits : walks) += 1;
        const auto o = s.advance(l, v);
        if (v.is_eog(best)) {
          ASSERT_TRUE(o.finished) << "kind " << kind << " after '" << answer << "'";
          ASSERT_EQ(o.token, -1);
          break;
        }
        ASSERT_EQ(o.token, best) << "kind " << kind << " run " << run << " after '" << answer << "': took '"
                                 << (o.token >= 0 ? piece_of(o.token) : "") << "', best admitted '" << piece_of(best) << "'";
        const std::string p = piece_of(best);
        answer += p;
        history.push_back(best);
        if (oracle_json) {
          ASSERT_TRUE(oracle_json->feed(p));
        }
        if (oracle) {
          ASSERT_TRUE(oracle->feed(p));
        }
      }
    }
  }
  EXPECT_GT(lazy_hits, 100);  // the most likely token admitted: taken without walking the vocabulary
  EXPECT_GT(walks, 100);      // refused: the walk decides
}

TEST_F(sequence_constraint_test, a_guided_choice_answer_is_exactly_one_of_the_choices) {
  const auto& v = model_->vocab();
  const size_t nv = model_->config().n_vocab;
  const std::vector<std::string> choices = {"yes", "no", "not sure", "nope"};
  std::mt19937 rng(9);
  std::normal_distribution<float> noise(0.0f, 3.0f);
  std::map<std::string, int> seen;
  for (int run = 0; run < 40; ++run) {
    sampling_params params = run % 2 ? test::unfiltered(1.5f, 30) : test::greedy(30);
    params.ignore_eos = false;
    params.choices = choices;
    params.seed = 200 + static_cast<uint64_t>(run);
    sequence s(1, {id_of("x")}, params, static_cast<int32_t>(nv), 30);
    std::string text;
    while (!s.finished()) {
      std::vector<float> l(nv);
      for (auto& f : l) f = noise(rng);
      const auto o = s.advance(l, v);
      if (o.token >= 0) text += v.token_to_piece(o.token);
      if (o.finished) {
        EXPECT_EQ(o.finish_reason, "stop") << text;
      }
    }
    EXPECT_NE(std::find(choices.begin(), choices.end(), text), choices.end()) << "run " << run << ": " << text;
    ++seen[text];
  }
  EXPECT_GE(seen.size(), 3u) << "sampling reaches several choices";
  // "no" is a prefix of "nope" and "not sure": after "no" the answer may end or go on.
  sampling_params params = test::greedy(30);
  params.ignore_eos = false;
  params.choices = choices;
  sequence s(1, {id_of("x")}, params, static_cast<int32_t>(nv), 30);
  std::vector<float> l(nv, 0.0f);
  l[static_cast<size_t>(id_of("n"))] = 5.0f;
  EXPECT_EQ(s.advance(l, v).token, id_of("n"));
  l[static_cast<size_t>(id_of("o"))] = 6.0f;
  EXPECT_FALSE(s.advance(l, v).finished);
  l.assign(nv, 0.0f);
  l[static_cast<size_t>(tiny_model_eot_id)] = 5.0f;  // end-of-generation now ends a whole choice
  const auto o = s.advance(l, v);
  EXPECT_TRUE(o.finished);
  EXPECT_EQ(o.token, -1);
  // With ignore_eos too: end-of-generation is allowed only where the answer is whole, so it ends it
  // (else its text would leave every choice behind and ban every token).
  params.ignore_eos = true;
  sequence t(2, {id_of("x")}, params, static_cast<int32_t>(nv), 30);
  l.assign(nv, 0.0f);
  l[static_cast<size_t>(id_of("n"))] = 5.0f;
  (void)t.advance(l, v);
  l[static_cast<size_t>(id_of("o"))] = 6.0f;
  (void)t.advance(l, v);
  l.assign(nv, 0.0f);
  l[static_cast<size_t>(tiny_model_eot_id)] = 5.0f;
  const auto e = t.advance(l, v);
  EXPECT_TRUE(e.finished);
  EXPECT_EQ(e.finish_reason, "stop");
  EXPECT_EQ(e.token, -1);
}

}  // namespace
}  // namespace fw
