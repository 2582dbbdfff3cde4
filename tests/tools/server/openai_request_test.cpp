// openai_request: what a request body becomes, and which bodies are refused with which message.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "tools/server/openai_request.hpp"

namespace fw::server {
namespace {

generation_request ok(const std::string& body, bool chat) {
  auto r = parse_generation_request(body, chat, sampling_params{});
  if (auto* e = std::get_if<api_error>(&r)) ADD_FAILURE() << body << " -> " << e->message;
  return std::holds_alternative<generation_request>(r) ? std::get<generation_request>(r) : generation_request{};
}

api_error refused(const std::string& body, bool chat) {
  auto r = parse_generation_request(body, chat, sampling_params{});
  if (std::holds_alternative<generation_request>(r)) {
    ADD_FAILURE() << body << " was accepted";
    return {};
  }
  return std::get<api_error>(r);
}

TEST(openai_request, chat_fields_become_sampling_params) {
  const auto g = ok(R"({"model":"m","messages":[{"role":"developer","content":"Be brief."},
      {"role":"user","content":[{"type":"text","text":"Hi "},{"type":"text","text":"there"}]}],
      "temperature":0.25,"top_p":0.5,"top_k":-1,"min_p":0.1,"seed":18446744073709551615,
      "max_completion_tokens":7,"stop":"END","stream":true,"stream_options":{"include_usage":true},
      "presence_penalty":1.5,"return_token_ids":true,"user":"ignored","logprobs":false})",
                    true);
  ASSERT_EQ(g.messages.size(), 2u);
  EXPECT_EQ(g.messages[0].role, "system");  // developer is the newer name of system
  EXPECT_EQ(g.messages[1].content, "Hi there");
  EXPECT_FLOAT_EQ(g.params.temperature, 0.25f);
  EXPECT_FLOAT_EQ(g.params.top_p, 0.5f);
  EXPECT_EQ(g.params.top_k, 0);  // -1 is vLLM's "off"
  EXPECT_EQ(g.params.seed, 18446744073709551615ull);
  EXPECT_EQ(g.params.max_tokens, 7);
  EXPECT_TRUE(g.max_tokens_set);
  EXPECT_EQ(g.params.stop, std::vector<std::string>{"END"});
  EXPECT_TRUE(g.stream);
  EXPECT_TRUE(g.include_usage);
  EXPECT_TRUE(g.return_token_ids);
  EXPECT_FLOAT_EQ(g.params.presence_penalty, 1.5f);
}

TEST(openai_request, defaults_stay_when_fields_are_absent_or_null) {
  sampling_params d;
  d.temperature = 0.7f;
  d.max_tokens = 33;
  auto r = parse_generation_request(R"({"prompt":"x","temperature":null})", false, d);
  ASSERT_TRUE(std::holds_alternative<generation_request>(r));
  const auto& g = std::get<generation_request>(r);
  EXPECT_FLOAT_EQ(g.params.temperature, 0.7f);
  EXPECT_EQ(g.params.max_tokens, 33);
  EXPECT_FALSE(g.max_tokens_set);
  ASSERT_EQ(g.prompts.size(), 1u);
  EXPECT_EQ(g.prompts[0].text, "x");
}

TEST(openai_request, logprobs_forms_and_caps) {
  EXPECT_EQ(ok(R"({"prompt":"x","logprobs":3})", false).params.logprobs, 3);
  EXPECT_EQ(ok(R"({"prompt":"x"})", false).params.logprobs, -1);
  EXPECT_EQ(ok(R"({"messages":[{"role":"user","content":"x"}],"logprobs":true})", true).params.logprobs, 0);
  EXPECT_EQ(ok(R"({"messages":[{"role":"user","content":"x"}],"logprobs":true,"top_logprobs":20})", true).params.logprobs,
            20);
  EXPECT_EQ(refused(R"({"prompt":"x","logprobs":21})", false).param, "logprobs");
  EXPECT_EQ(refused(R"({"prompt":"x","logprobs":true})", false).param, "logprobs");
  EXPECT_EQ(refused(R"({"messages":[{"role":"user","content":"x"}],"top_logprobs":2})", true).param, "top_logprobs");
  EXPECT_EQ(refused(R"({"messages":[{"role":"user","content":"x"}],"logprobs":true,"top_logprobs":21})", true).param,
            "top_logprobs");
}

TEST(openai_request, completion_prompt_forms) {
  const auto one = ok(R"({"prompt":["only one"]})", false);
  ASSERT_EQ(one.prompts.size(), 1u);
  EXPECT_EQ(one.prompts[0].text, "only one");
  EXPECT_FALSE(one.prompts[0].is_ids);
  const auto ids = ok(R"({"prompt":[1,2,3]})", false);
  ASSERT_EQ(ids.prompts.size(), 1u);
  EXPECT_TRUE(ids.prompts[0].is_ids);
  EXPECT_EQ(ids.prompts[0].ids, (std::vector<int32_t>{1, 2, 3}));
  const auto texts = ok(R"({"prompt":["a","b",""]})", false);
  ASSERT_EQ(texts.prompts.size(), 3u);
  EXPECT_EQ(texts.prompts[1].text, "b");
  EXPECT_EQ(texts.prompts[2].text, "");
  const auto lists = ok(R"({"prompt":[[5],[6,7]]})", false);
  ASSERT_EQ(lists.prompts.size(), 2u);
  EXPECT_TRUE(lists.prompts[1].is_ids);
  EXPECT_EQ(lists.prompts[1].ids, (std::vector<int32_t>{6, 7}));
  EXPECT_NE(refused(R"({"prompt":[1,"a"]})", false).message.find("integers only"), std::string::npos);
  EXPECT_NE(refused(R"({"prompt":["a",1]})", false).message.find("prompt[1]: a batch of strings"), std::string::npos);
  EXPECT_NE(refused(R"({"prompt":[[1],"a"]})", false).message.find("prompt[1]: a batch of token-id arrays"),
            std::string::npos);
  EXPECT_NE(refused(R"({"prompt":[[1],[]]})", false).message.find("prompt[1] is an empty token-id array"),
            std::string::npos);
  EXPECT_NE(refused(R"({"prompt":[[1],[2.5]]})", false).message.find("prompt[1]: a token-id array holds integers"),
            std::string::npos);
  EXPECT_NE(refused(R"({"prompt":[{"a":1}]})", false).message.find("got an object"), std::string::npos);
  EXPECT_NE(refused(R"({"prompt":[4294967296]})", false).message.find("out of range"), std::string::npos);
}

TEST(openai_request, logit_bias_stop_token_ids_and_ignore_eos) {
  const auto g = ok(R"({"prompt":"x","logit_bias":{"17":-100,"2":5.5},"stop_token_ids":[3,4],"ignore_eos":true,
      "min_tokens":9})", false);
  EXPECT_EQ(g.params.min_tokens, 9);
  std::vector<std::pair<int32_t, float>> bias;
  for (size_t i = 0; i < g.params.logit_bias_ids.size(); ++i) bias.push_back({g.params.logit_bias_ids[i], g.params.logit_bias[i]});
  std::sort(bias.begin(), bias.end());
  EXPECT_EQ(bias, (std::vector<std::pair<int32_t, float>>{{2, 5.5f}, {17, -100.0f}}));
  EXPECT_EQ(g.params.stop_token_ids, (std::vector<int32_t>{3, 4}));
  EXPECT_TRUE(g.params.ignore_eos);
  EXPECT_TRUE(ok(R"({"prompt":"x","logit_bias":{},"min_tokens":0,"guided_json":null})", false).params.logit_bias.empty());
  struct c {
    const char* body;
    const char* param;
    const char* text;
  };
  const c cases[] = {
      {R"({"prompt":"x","logit_bias":[1]})", "logit_bias", "must be an object"},
      {R"({"prompt":"x","logit_bias":{"abc":1}})", "logit_bias", "not a token id"},
      {R"({"prompt":"x","logit_bias":{"-1":1}})", "logit_bias", "not a token id"},
      {R"({"prompt":"x","logit_bias":{"99999999999":1}})", "logit_bias", "not a token id"},
      {R"({"prompt":"x","logit_bias":{"5":101}})", "logit_bias", "-100 to 100"},
      {R"({"prompt":"x","logit_bias":{"5":"1"}})", "logit_bias", "-100 to 100"},
      {R"({"prompt":"x","stop_token_ids":[1.5]})", "stop_token_ids", "token ids"},
      {R"({"prompt":"x","stop_token_ids":5})", "stop_token_ids", "must be an array"},
      {R"({"prompt":"x","ignore_eos":1})", "ignore_eos", "must be a boolean"},
      {R"({"prompt":"x","min_tokens":-1})", "min_tokens", "out of range"},
      {R"({"prompt":"x","min_tokens":9,"max_tokens":8})", "min_tokens", "above max_tokens = 8"},
      {R"x({"prompt":"x","guided_regex":"a(?=b)"})x", "guided_regex", "lookaround"},
      {R"({"prompt":"x","guided_regex":""})", "guided_regex", "non-empty string"},
      {R"({"prompt":"x","guided_regex":"a","guided_choice":["a"]})", "", "cannot be combined"},
      {R"({"prompt":"x","guided_grammar":"root ::= item"})", "guided_grammar", "line 1, column 10: the rule item is used but not defined"},
      {R"({"prompt":"x","grammar":""})", "grammar", "non-empty string"},
      {R"({"prompt":"x","grammar":"root ::= \"a\"","guided_grammar":"root ::= \"b\""})", "grammar", "given twice"},
      {R"({"prompt":"x","grammar":"root ::= \"a\"","guided_regex":"a"})", "", "cannot be combined"},
      {R"({"prompt":"x","prompt_logprobs":21})", "prompt_logprobs", "out of range"},
      {R"({"prompt":"x","prompt_logprobs":true})", "prompt_logprobs", "must be an integer"},
      {R"({"prompt":"x","prompt_logprobs":1,"stream":true})", "prompt_logprobs", "not available with stream"},
  };
  for (const auto& x : cases) {
    const api_error e = refused(x.body, false);
    EXPECT_EQ(e.param, x.param) << x.body;
    EXPECT_NE(e.message.find(x.text), std::string::npos) << x.body << " -> " << e.message;
  }
}

TEST(openai_request, a_gbnf_grammar_constrains_plain_decoding) {
  for (const char* field : {"guided_grammar", "grammar"}) {
    const auto g = ok(std::string(R"({"prompt":"x",")") + field + R"(":"root ::= [a-z]+ \"!\""})", false);
    EXPECT_EQ(g.params.grammar, "root ::= [a-z]+ \"!\"") << field;
    EXPECT_EQ(g.params.max_draft_k, 0) << field;  // constrained answers decode plainly
  }
}

TEST(openai_request, prompt_scoring_forms) {
  // Echo with logprobs scores the prompt with that many alternatives; vLLM's prompt_logprobs too.
  auto g = ok(R"({"prompt":"x","echo":true,"logprobs":2})", false);
  EXPECT_TRUE(g.echo);
  EXPECT_EQ(g.params.prompt_logprobs, 2);
  EXPECT_EQ(g.prompt_logprobs, -1) << "not vLLM's field";
  g = ok(R"({"prompt":"x","prompt_logprobs":1,"echo":true,"logprobs":3})", false);
  EXPECT_EQ(g.prompt_logprobs, 1);
  EXPECT_EQ(g.params.prompt_logprobs, 3) << "the wider of the two";
  g = ok(R"({"messages":[{"role":"user","content":"x"}],"prompt_logprobs":0})", true);
  EXPECT_EQ(g.params.prompt_logprobs, 0);
  EXPECT_EQ(ok(R"({"prompt":"x","prompt_logprobs":null})", false).params.prompt_logprobs, -1);
  EXPECT_EQ(ok(R"({"prompt":"x","echo":true})", false).params.prompt_logprobs, -1) << "echo alone scores nothing";
  EXPECT_EQ(ok(R"({"prompt":"x","logprobs":2})", false).params.prompt_logprobs, -1) << "logprobs alone neither";
  // max_tokens = 0 with echo: the prompt only (lm-eval's loglikelihood requests).
  g = ok(R"({"prompt":"x","max_tokens":0,"echo":true,"logprobs":1})", false);
  EXPECT_TRUE(g.prompt_only);
  EXPECT_EQ(g.params.max_tokens, 0);
  EXPECT_FALSE(ok(R"({"prompt":"x","max_tokens":1,"echo":true})", false).prompt_only);
}

TEST(openai_request, json_mode) {
  const auto g = ok(R"({"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_object"}})", true);
  EXPECT_TRUE(g.params.json_object);
  EXPECT_EQ(g.params.max_draft_k, 0) << "decoded plainly";
  EXPECT_TRUE(ok(R"({"prompt":"x","response_format":{"type":"json_object"}})", false).params.json_object);
  EXPECT_FALSE(ok(R"({"prompt":"x","response_format":{"type":"text"}})", false).params.json_object);
}

TEST(openai_request, json_schema_from_response_format_or_guided_json) {
  // The schema is the body's own text: its property order kept (std::map order would put "b" first).
  auto g = ok(R"({"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema",
      "json_schema":{"name":"p","strict":true,"schema":{"type":"object","properties":{"z":{"type":"string"},
      "b":{"type":"integer"}},"required":["z","b"],"additionalProperties":false}}}})", true);
  EXPECT_EQ(g.params.json_schema, R"({"type":"object","properties":{"z":{"type":"string"},
      "b":{"type":"integer"}},"required":["z","b"],"additionalProperties":false})");
  EXPECT_EQ(g.params.max_draft_k, 0) << "decoded plainly";
  EXPECT_FALSE(g.params.json_object);
  g = ok(R"({"prompt":"x","guided_json":{"type":"array","items":{"type":"integer"}}})", false);
  EXPECT_EQ(g.params.json_schema, R"({"type":"array","items":{"type":"integer"}})");
  EXPECT_EQ(ok(R"({"prompt":"x","guided_regex":"[0-9]{3}-[0-9]{4}"})", false).params.regex, "[0-9]{3}-[0-9]{4}");
  g = ok(R"({"prompt":"x","guided_json":"{\"type\": \"boolean\"}"})", false);  // vLLM takes the text too
  EXPECT_EQ(g.params.json_schema, R"({"type": "boolean"})");
  struct c {
    const char* body;
    const char* param;
    const char* text;
  };
  const c cases[] = {
      {R"({"prompt":"x","guided_json":{"type":"string","format":"email","uniqueItems":true}})", "guided_json",
       "\"uniqueItems\" is not supported"},
      {R"({"prompt":"x","guided_json":{"type":"string","pattern":"\\b"}})", "guided_json", "word boundaries"},
      {R"({"prompt":"x","guided_json":"{\"type\":"})", "guided_json", "not valid JSON"},
      {R"({"prompt":"x","guided_json":3})", "guided_json", "must be an object"},
      {R"({"prompt":"x","response_format":{"type":"json_schema","json_schema":{"name":"a","schema":{"type":"object",
          "properties":{"n":{"type":"integer","minimum":1}}}}}})", "response_format", "/properties/n"},
      {R"({"prompt":"x","response_format":{"type":"json_schema","json_schema":{"name":"a","strict":"yes",
          "schema":{}}}})", "response_format", "strict must be a boolean"},
      {R"({"prompt":"x","guided_json":{},"response_format":{"type":"json_schema","json_schema":{"schema":{}}}})",
       "response_format", "given twice"},
      {R"({"prompt":"x","guided_json":{},"guided_choice":["a"]})", "", "cannot be combined"},
      {R"({"prompt":"x","guided_json":{},"min_tokens":3})", "", "min_tokens"},
  };
  for (const auto& x : cases) {
    const api_error e = refused(x.body, false);
    EXPECT_EQ(e.status, 400u) << x.body;
    EXPECT_EQ(e.param, x.param) << x.body << " -> " << e.message;
    EXPECT_NE(e.message.find(x.text), std::string::npos) << x.body << " -> " << e.message;
  }
}

TEST(openai_request, guided_choice) {
  const auto g = ok(R"({"prompt":"x","guided_choice":["yes","no"]})", false);
  EXPECT_EQ(g.params.choices, (std::vector<std::string>{"yes", "no"}));
  EXPECT_EQ(g.params.max_draft_k, 0);
  EXPECT_TRUE(ok(R"({"prompt":"x","guided_choice":null})", false).params.choices.empty());
  for (const char* body : {R"({"prompt":"x","guided_choice":[]})", R"({"prompt":"x","guided_choice":"yes"})",
                           R"({"prompt":"x","guided_choice":["yes",""]})", R"({"prompt":"x","guided_choice":[1]})"})
    EXPECT_EQ(refused(body, false).param, "guided_choice") << body;
  EXPECT_NE(refused(R"({"prompt":"x","guided_choice":["a"],"response_format":{"type":"json_object"}})", false)
                .message.find("JSON mode"),
            std::string::npos);
}

TEST(openai_request, choices_per_prompt) {
  EXPECT_EQ(ok(R"({"prompt":"x"})", false).n, 1u);
  EXPECT_EQ(ok(R"({"prompt":"x","n":3,"best_of":3})", false).n, 3u);
  EXPECT_EQ(ok(R"({"messages":[{"role":"user","content":"x"}],"n":64})", true).n, 64u);
  EXPECT_EQ(ok(R"({"prompt":["a","b"],"n":32})", false).n, 32u);
  EXPECT_EQ(refused(R"({"prompt":"x","n":0})", false).param, "n");
  EXPECT_EQ(refused(R"({"messages":[{"role":"user","content":"x"}],"n":65})", true).param, "n");
  const api_error many = refused(R"({"prompt":["a","b","c"],"n":22})", false);
  EXPECT_EQ(many.param, "prompt");
  EXPECT_NE(many.message.find("66 choices; at most 64"), std::string::npos) << many.message;
  const api_error best = refused(R"({"prompt":"x","n":2,"best_of":4})", false);
  EXPECT_EQ(best.param, "best_of");
  EXPECT_NE(best.message.find("send best_of = n"), std::string::npos);
  parse_limits small;
  small.max_choices = 4;
  EXPECT_TRUE(std::holds_alternative<api_error>(parse_generation_request(R"({"prompt":"x","n":5})", false, {}, small)));
  EXPECT_TRUE(std::holds_alternative<generation_request>(
      parse_generation_request(R"({"prompt":["x","y"],"n":2})", false, {}, small)));
}

TEST(openai_request, refusals_name_the_field) {
  struct c {
    const char* body;
    bool chat;
    const char* param;
    const char* text;
  };
  const c cases[] = {
      {R"({"prompt":"x","temperature":2.5})", false, "temperature", "0 to 2"},
      {R"({"prompt":"x","top_p":0})", false, "top_p", "above 0"},
      {R"({"prompt":"x","top_k":-2})", false, "top_k", "out of range"},
      {R"({"prompt":"x","max_tokens":0})", false, "max_tokens", "needs echo = true"},
      {R"({"prompt":"x","max_tokens":-1})", false, "max_tokens", "out of range"},
      {R"({"messages":[{"role":"user","content":"x"}],"max_tokens":0})", true, "max_tokens", "out of range"},
      {R"({"prompt":"x","max_tokens":"5"})", false, "max_tokens", "must be an integer"},
      {R"({"prompt":"x","seed":-3})", false, "seed", "0 to 18446744073709551615"},
      {R"({"prompt":"x","seed":1e30})", false, "seed", "0 to"},
      {R"({"prompt":"x","n":65})", false, "n", "n = 65"},
      {R"({"messages":[{"role":"user","content":"x"}],"echo":true})", true, "echo", "not supported"},
      {R"({"prompt":"x","stop":[1]})", false, "stop", "must hold strings"},
      {R"({"prompt":"x","stream_options":{"include_usage":true}})", false, "stream_options", "only allowed"},
      {R"({"messages":[{"role":"function","content":"x"}]})", true, "messages", "\"function\" is not supported"},
      {R"({"messages":[{"content":"x"}]})", true, "messages", "role must be a string"},
      {R"({"messages":[{"role":"user"}]})", true, "messages", "content is required"},
      {R"({"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":{}}})",
       true, "response_format", "needs {\"json_schema\": {\"name\""},
      {R"({"messages":[{"role":"user","content":"x"}],"response_format":{"type":"xml"}})", true, "response_format",
       "only {\"type\": \"text\"}"},
      {R"({"messages":[{"role":"user","content":"x"}],"response_format":"json"})", true, "response_format",
       "not supported"},
      {R"({"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_object"},"min_tokens":2})",
       true, "", "JSON mode"},
  };
  for (const auto& x : cases) {
    const api_error e = refused(x.body, x.chat);
    EXPECT_EQ(e.status, 400u) << x.body;
    EXPECT_EQ(e.param, x.param) << x.body;
    EXPECT_NE(e.message.find(x.text), std::string::npos) << x.body << " -> " << e.message;
  }
}

TEST(openai_request, malformed_json_is_a_400_not_an_exception) {
  for (const std::string& body : {std::string(), std::string("{"), std::string("nul"), std::string("{\"a\":NaN}"),
                                 std::string("{\"prompt\":\"\xC3\x28\"}"), std::string(200000, '['),
                                 std::string("\"just a string\""),
                                 std::string("{\"prompt\":1e999}"), std::string("{\"seed\":-1e400}")}) {
    const api_error e = refused(body, false);
    EXPECT_EQ(e.status, 400u);
    EXPECT_FALSE(e.message.empty());
  }
  EXPECT_NE(refused(std::string(100, '[') + std::string(100, ']'), false).message.find("deeper than 64"),
            std::string::npos);
}

TEST(openai_request, error_body_is_openai_shaped) {
  const api_error e = bad_request("temperature is bad", "temperature");
  EXPECT_EQ(e.body(),
            R"({"error":{"code":null,"message":"temperature is bad","param":"temperature","type":"invalid_request_error"}})");
  EXPECT_EQ(from_engine_error({errc::overloaded, "queue full"}, 2).status, 429u);
  EXPECT_EQ(from_engine_error({errc::overloaded, "queue full"}, 2).retry_after_s, 2u);
  EXPECT_EQ(from_engine_error({errc::context_overflow, "too long"}, 1).code, "context_length_exceeded");
  EXPECT_EQ(from_engine_error({errc::internal, "bug"}, 1).status, 500u);
}

}  // namespace
}  // namespace fw::server
