// tool_calls: the prompt's tool text, the answer's schema, reading answers, the stream filter, and
// what a chat request with tools becomes (openai_request).
#include <gtest/gtest.h>

#include <random>
#include <string>

#include <nlohmann/json.hpp>

#include "runtime/sample/grammar_recognizer.hpp"
#include "runtime/sample/json_schema.hpp"
#include "tools/server/openai_request.hpp"
#include "tools/server/tool_calls.hpp"

namespace fw::server {
namespace {

using json = nlohmann::json;

tool_spec weather_and_time(tool_choice choice, std::string named = {}) {
  tool_spec s;
  s.functions.push_back({"get_weather", "The weather in a city",
                         R"({"type":"object","properties":{"city":{"type":"string"},"unit":{"enum":["C","F"]}},"required":["city"]})"});
  s.functions.push_back({"get_time", "", ""});
  s.choice = choice;
  s.named = std::move(named);
  return s;
}

// Whether the schema's grammar admits the whole text.
bool admits(const std::string& schema, const std::string& text) {
  auto g = json_schema_grammar(schema);
  if (!g) {
    ADD_FAILURE() << g.err().message;
    return false;
  }
  grammar_recognizer rec(*g);
  return rec.feed(text) && rec.can_end();
}

TEST(tool_calls, the_prompt_lists_every_function_and_the_syntax_of_the_choice) {
  const std::string p = tool_prompt(weather_and_time(tool_choice::automatic));
  // One JSON object a line between the tags, parameters in the client's order.
  const auto begin = p.find("<tools>\n") + 8, end = p.find("\n</tools>", begin) + 1;
  ASSERT_GT(end, begin);
  std::vector<json> lines;
  for (size_t at = begin; at < end;) {
    const size_t nl = p.find('\n', at);
    lines.push_back(json::parse(p.substr(at, nl - at)));
    at = nl + 1;
  }
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0]["function"]["name"], "get_weather");
  EXPECT_EQ(lines[0]["function"]["description"], "The weather in a city");
  EXPECT_LT(p.find("\"city\""), p.find("\"unit\""));
  EXPECT_FALSE(lines[1]["function"].contains("description"));  // none given
  EXPECT_EQ(lines[1]["function"]["parameters"]["type"], "object");  // a function with no parameters
  EXPECT_NE(p.find("<tool_call>"), std::string::npos);
  EXPECT_NE(tool_prompt(weather_and_time(tool_choice::named, "get_time")).find("calling get_time"), std::string::npos);
  EXPECT_NE(tool_prompt(weather_and_time(tool_choice::required)).find("JSON array"), std::string::npos);
}

TEST(tool_calls, a_named_function_constrains_the_answer_to_its_arguments) {
  const std::string schema = tool_answer_schema(weather_and_time(tool_choice::named, "get_weather"));
  EXPECT_TRUE(admits(schema, R"({"city": "Paris", "unit": "C"})"));
  EXPECT_TRUE(admits(schema, R"({"city": "Oslo"})"));
  EXPECT_FALSE(admits(schema, R"({"unit": "C"})"));  // city is required
  EXPECT_FALSE(admits(schema, R"({"city": "Oslo", "unit": "K"})"));
  // No parameters: the empty object only.
  const std::string none = tool_answer_schema(weather_and_time(tool_choice::named, "get_time"));
  EXPECT_TRUE(admits(none, "{}"));
  EXPECT_FALSE(admits(none, R"({"zone": "UTC"})"));
  EXPECT_TRUE(tool_answer_schema(weather_and_time(tool_choice::automatic)).empty());
}

TEST(tool_calls, required_constrains_the_answer_to_an_array_of_listed_calls) {
  auto spec = weather_and_time(tool_choice::required);
  const std::string schema = tool_answer_schema(spec);
  EXPECT_TRUE(admits(schema, R"([{"name": "get_weather", "arguments": {"city": "Rome"}}])"));
  EXPECT_TRUE(admits(schema, R"([{"name": "get_time", "arguments": {}}, {"name": "get_weather", "arguments": {"city": "Rome"}}])"));
  EXPECT_FALSE(admits(schema, "[]"));                                                       // at least one call
  EXPECT_FALSE(admits(schema, R"([{"name": "get_news", "arguments": {}}])"));               // not listed
  EXPECT_FALSE(admits(schema, R"([{"name": "get_weather", "arguments": {"unit": "C"}}])"));  // its schema holds
  // A function's own references ("#/$defs/...", "#") follow its schema into the array.
  tool_spec refs;
  refs.choice = tool_choice::required;
  refs.functions.push_back({"add_pet", "", R"({"type":"object","properties":{"pet":{"$ref":"#/$defs/Pet"}},"required":["pet"],
      "$defs":{"Pet":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}}})"});
  refs.functions.push_back({"tree", "", R"({"type":"object","properties":{"kids":{"type":"array","items":{"$ref":"#"},"maxItems":2}}})"});
  const std::string moved = tool_answer_schema(refs);
  EXPECT_TRUE(admits(moved, R"([{"name": "add_pet", "arguments": {"pet": {"name": "Rex"}}}])")) << moved;
  EXPECT_FALSE(admits(moved, R"([{"name": "add_pet", "arguments": {"pet": {}}}])"));
  EXPECT_TRUE(admits(moved, R"([{"name": "tree", "arguments": {"kids": [{"kids": []}, {}]}}])"));
  EXPECT_FALSE(admits(moved, R"([{"name": "tree", "arguments": {"kids": [{"name": "tree", "arguments": {}}]}}])"));
  refs.functions.pop_back();  // one function: no anyOf
  EXPECT_TRUE(admits(tool_answer_schema(refs), R"([{"name": "add_pet", "arguments": {"pet": {"name": "Rex"}}}])"));
  spec.parallel = false;
  const std::string one = tool_answer_schema(spec);
  EXPECT_TRUE(admits(one, R"([{"name": "get_time", "arguments": {}}])"));
  EXPECT_FALSE(admits(one, R"([{"name": "get_time", "arguments": {}}, {"name": "get_time", "arguments": {}}])"));
}

TEST(tool_calls, answers_are_read_by_the_choice) {
  auto named = read_tool_answer(weather_and_time(tool_choice::named, "get_weather"), " {\"city\": \"Paris\"}\n");
  ASSERT_EQ(named.calls.size(), 1u);
  EXPECT_EQ(named.calls[0].name, "get_weather");
  EXPECT_EQ(named.calls[0].arguments, R"({"city": "Paris"})");
  EXPECT_TRUE(read_tool_answer(weather_and_time(tool_choice::named, "get_weather"), "").calls.empty());

  const auto required = weather_and_time(tool_choice::required);
  auto two = read_tool_answer(required, R"([{"name": "get_time", "arguments": {}}, {"name": "get_weather", "arguments": {"city": "Rome", "unit": "C"}}])");
  ASSERT_EQ(two.calls.size(), 2u);
  EXPECT_EQ(two.calls[1].name, "get_weather");
  EXPECT_EQ(json::parse(two.calls[1].arguments), json::parse(R"({"city": "Rome", "unit": "C"})"));
  EXPECT_EQ(two.calls[1].arguments.find("city"), 2u);  // the model's order kept
  EXPECT_TRUE(two.content.empty());
  // Cut off (max_tokens): the whole calls before the cut; none whole: the text is the content.
  auto cut = read_tool_answer(required, R"([{"name": "get_time", "argum)");
  EXPECT_TRUE(cut.calls.empty());
  EXPECT_EQ(cut.content, R"([{"name": "get_time", "argum)");
  auto after_one = read_tool_answer(required, R"( [{"name": "get_weather", "arguments": {"city": "a}\"]"}},
    {"name": "get_time", "arguments": {"ci)");
  ASSERT_EQ(after_one.calls.size(), 1u);
  EXPECT_EQ(json::parse(after_one.calls[0].arguments)["city"], "a}\"]");  // brackets inside strings
  EXPECT_TRUE(after_one.content.empty());
  EXPECT_TRUE(read_tool_answer(required, R"({"name": "get_time", "arguments": {}})").calls.empty());  // not an array
}

TEST(tool_calls, auto_reads_tool_call_blocks_and_keeps_the_rest_as_text) {
  const auto spec = weather_and_time(tool_choice::automatic);
  auto a = read_tool_answer(spec, "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Lima\"}}\n"
                                  "</tool_call>\n<tool_call>{\"name\": \"get_time\", \"parameters\": \"{}\"}</tool_call>");
  ASSERT_EQ(a.calls.size(), 2u);
  EXPECT_EQ(a.calls[0].name, "get_weather");
  EXPECT_EQ(a.calls[0].arguments, R"({"city":"Lima"})");
  EXPECT_EQ(a.calls[1].arguments, "{}");  // "parameters" as a string holding an object
  EXPECT_EQ(a.content, "Let me check.");
  // An unclosed last block is read to the end (the model may stop at its end-of-turn token).
  auto open = read_tool_answer(spec, "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n");
  ASSERT_EQ(open.calls.size(), 1u);
  EXPECT_TRUE(open.content.empty());
  // Blocks that are not calls stay text; without a call the answer is the text as it was.
  for (const std::string& text : {std::string("plain answer  "), std::string("<tool_call>{\"name\": \"get_news\", \"arguments\": {}}</tool_call>"),
                                 std::string("<tool_call>not json</tool_call>"), std::string("<tool_call>{\"name\": \"get_time\", \"arguments\": [1]}</tool_call>")}) {
    auto t = read_tool_answer(spec, text);
    EXPECT_TRUE(t.calls.empty()) << text;
    EXPECT_EQ(t.content, text);
  }
  auto mixed = read_tool_answer(spec, "A <tool_call>oops</tool_call> B <tool_call>{\"name\": \"get_time\"}</tool_call>");
  ASSERT_EQ(mixed.calls.size(), 1u);
  EXPECT_EQ(mixed.content, "A <tool_call>oops</tool_call> B");
  // parallel_tool_calls = false: the first call only.
  auto single = spec;
  single.parallel = false;
  EXPECT_EQ(read_tool_answer(single, "<tool_call>{\"name\": \"get_time\"}</tool_call><tool_call>{\"name\": \"get_weather\", "
                                     "\"arguments\": {\"city\": \"x\"}}</tool_call>").calls.size(), 1u);
  // Arguments nested deeper than 64 levels are not read as a call (nor recursed into).
  const std::string deep = "<tool_call>{\"name\": \"get_time\", \"arguments\": {\"a\": " + std::string(100000, '[') +
                           std::string(100000, ']') + "}}</tool_call>";
  EXPECT_TRUE(read_tool_answer(spec, deep).calls.empty());
}

TEST(tool_calls, the_stream_filter_holds_only_what_may_start_a_call) {
  // Every split of the text into pieces streams the same content and holds the same call.
  const std::string text = "Sure <tool <b> text <tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call> after";
  const auto spec = weather_and_time(tool_choice::automatic);
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    tool_stream_filter f;
    std::string out;
    for (size_t at = 0; at < text.size();) {
      const size_t n = std::min<size_t>(text.size() - at, 1 + rng() % 6);
      out += f.feed(std::string_view(text).substr(at, n));
      at += n;
    }
    ASSERT_EQ(out, "Sure <tool <b> text ");
    const auto a = read_tool_answer(spec, f.held());
    ASSERT_EQ(a.calls.size(), 1u);
    EXPECT_EQ(a.content, "after");
  }
  tool_stream_filter f;
  EXPECT_EQ(f.feed("x <tool_c"), "x ");
  EXPECT_EQ(f.held(), "<tool_c");
  EXPECT_EQ(f.feed("ase"), "<tool_case");  // not a call after all
  EXPECT_TRUE(f.held().empty());
}

TEST(tool_calls, history_is_written_as_the_prompt_shows_calls) {
  EXPECT_EQ(tool_call_text("get_time", R"({ "zone" : "UTC" })"),
            "<tool_call>\n{\"name\":\"get_time\",\"arguments\":{\"zone\":\"UTC\"}}\n</tool_call>");
  EXPECT_EQ(tool_call_text("f", "not json"), "<tool_call>\n{\"name\":\"f\",\"arguments\":\"not json\"}\n</tool_call>");
  EXPECT_EQ(tool_result_text("21 C"), "<tool_response>\n21 C\n</tool_response>");
}

generation_request ok(const std::string& body) {
  auto r = parse_generation_request(body, true, sampling_params{});
  if (auto* e = std::get_if<api_error>(&r)) ADD_FAILURE() << body << " -> " << e->message;
  return std::holds_alternative<generation_request>(r) ? std::get<generation_request>(r) : generation_request{};
}

api_error refused(const std::string& body, bool chat = true) {
  auto r = parse_generation_request(body, chat, sampling_params{});
  if (std::holds_alternative<generation_request>(r)) {
    ADD_FAILURE() << body << " was accepted";
    return {};
  }
  return std::get<api_error>(r);
}

const std::string tools_json =
    R"("tools":[{"type":"function","function":{"name":"get_weather","description":"Weather",
        "parameters":{"type":"object","properties":{"unit":{"enum":["C","F"]},"city":{"type":"string"}},"required":["city"]}}},
      {"type":"function","function":{"name":"get_time"}}])";

TEST(openai_request_tools, tools_put_their_text_in_the_system_message_and_constrain_by_choice) {
  auto g = ok(R"({"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Weather in Oslo?"}],)" + tools_json + "}");
  EXPECT_EQ(g.tools.choice, tool_choice::automatic);  // the default with tools
  ASSERT_EQ(g.messages.size(), 2u);
  EXPECT_EQ(g.messages[0].content.rfind("Be brief.\n\n", 0), 0u);
  EXPECT_NE(g.messages[0].content.find("\"get_time\""), std::string::npos);
  EXPECT_LT(g.messages[0].content.find("\"unit\""), g.messages[0].content.find("\"city\""));  // the client's order
  EXPECT_TRUE(g.params.json_schema.empty());  // auto: free text
  EXPECT_NE(g.params.max_draft_k, 0);         // and speculation stays

  auto named = ok(R"({"messages":[{"role":"user","content":"Oslo?"}],)" + tools_json +
                  R"(,"tool_choice":{"type":"function","function":{"name":"get_weather"}}})");
  ASSERT_EQ(named.messages.size(), 2u);
  EXPECT_EQ(named.messages[0].role, "system");  // inserted
  EXPECT_EQ(named.tools.choice, tool_choice::named);
  EXPECT_EQ(json::parse(named.params.json_schema)["required"], json::array({"city"}));
  EXPECT_LT(named.params.json_schema.find("unit"), named.params.json_schema.find("city"));
  EXPECT_EQ(named.params.max_draft_k, 0);

  auto required = ok(R"({"messages":[{"role":"user","content":"Oslo?"}],)" + tools_json +
                     R"(,"tool_choice":"required","parallel_tool_calls":false})");
  EXPECT_EQ(json::parse(required.params.json_schema)["maxItems"], 1);

  // auto with a constraint: the answer follows it, calls are read from it.
  auto shaped = ok(R"({"messages":[{"role":"user","content":"Oslo?"}],)" + tools_json + R"(,"guided_regex":"<tool_call>.*"})");
  EXPECT_EQ(shaped.tools.choice, tool_choice::automatic);
  EXPECT_EQ(shaped.params.regex, "<tool_call>.*");

  auto none = ok(R"({"messages":[{"role":"user","content":"Oslo?"}],)" + tools_json + R"(,"tool_choice":"none"})");
  EXPECT_FALSE(none.tools.active());
  EXPECT_EQ(none.messages.size(), 1u);  // not shown
  EXPECT_FALSE(ok(R"({"messages":[{"role":"user","content":"x"}],"tools":[],"tool_choice":"auto"})").tools.active());
}

TEST(openai_request_tools, a_schema_keeps_the_clients_key_order_whatever_the_body_around_it) {
  // Escaped keys, spaces, a byte order mark, a duplicate (the last wins, as the parser reads it) and a
  // wide object elsewhere in the body.
  std::string wide = "{";
  for (int i = 0; i < 20000; ++i) wide += (i ? ",\"k" : "\"k") + std::to_string(i) + "\":1";
  wide += "}";
  const auto g = ok("\xEF\xBB\xBF{ \"messages\" : [{\"role\":\"user\",\"content\":\"x\"}], \"vendor\": " + wide +
                    R"(, "t\u006fols" : [ {"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"b":{}}}}},
                       {"type":"function","function":{"name":"g","parameters":{"type":"object","properties":{"zz":{}}}}} ],
                       "tools": [ {"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"z":{"type":"string"},"a":{"type":"string"}}}}} ],
                       "tool_choice": {"type": "function", "function": {"name": "f"}}})");
  EXPECT_LT(g.params.json_schema.find("\"z\""), g.params.json_schema.find("\"a\"")) << g.params.json_schema;
  EXPECT_EQ(g.params.json_schema.find("zz"), std::string::npos);
}

TEST(openai_request_tools, earlier_calls_and_tool_results_become_turns) {
  auto g = ok(R"({"messages":[{"role":"user","content":"Oslo?"},
      {"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}}]},
      {"role":"tool","tool_call_id":"call_1","content":"-3 C"},
      {"role":"assistant","content":"Checking.","tool_calls":[{"id":"c2","type":"function","function":{"name":"get_time","arguments":"{}"}}]}],)" +
              tools_json + "}");
  ASSERT_EQ(g.messages.size(), 5u);  // the tools' system message first
  EXPECT_EQ(g.messages[2].role, "assistant");
  EXPECT_EQ(g.messages[2].content, tool_call_text("get_weather", R"({"city":"Oslo"})"));
  EXPECT_EQ(g.messages[3].role, "user");
  EXPECT_EQ(g.messages[3].content, tool_result_text("-3 C"));
  EXPECT_EQ(g.messages[4].content, "Checking.\n" + tool_call_text("get_time", "{}"));
}

TEST(openai_request_tools, bad_tools_are_refused_naming_what_is_wrong) {
  const std::string user = R"({"messages":[{"role":"user","content":"x"}],)";
  struct bad {
    std::string body;
    std::string says;
    std::string param;
  };
  const std::vector<bad> cases = {
      {user + R"("tools":{}})", "tools must be an array", "tools"},
      {user + R"("tools":[{"type":"retrieval"}]})", "tools[0] must be", "tools"},
      {user + R"("tools":[{"type":"function","function":{"name":"a b"}}]})", "tools[0].function.name", "tools"},
      {user + R"("tools":[{"type":"function","function":{"name":"f"}},{"type":"function","function":{"name":"f"}}]})", "listed twice", "tools"},
      {user + R"("tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"n":{"type":"integer","minimum":1}}}}}]})",
       "tools[0].function.parameters", "tools"},
      {user + tools_json + R"(,"tool_choice":{"type":"function","function":{"name":"get_news"}}})", "get_news", "tool_choice"},
      {user + tools_json + R"(,"tool_choice":"sometimes"})", "tool_choice must be", "tool_choice"},
      {user + R"("tool_choice":"required"})", "needs tools", "tool_choice"},
      {user + tools_json + R"(,"tool_choice":{"type":5,"function":{"name":"get_time"}}})", "tool_choice must be", "tool_choice"},
      {user + tools_json + R"(,"tool_choice":"required","response_format":{"type":"json_object"}})", "cannot be combined", "tool_choice"},
      {user + tools_json + R"(,"tool_choice":{"type":"function","function":{"name":"get_time"}},"guided_regex":"a"})", "cannot be combined", "tool_choice"},
      {user + tools_json + R"(,"tool_choice":"required","min_tokens":3})", "min_tokens", "min_tokens"},
      {user + R"("functions":[{"name":"f"}]})", "send tools and tool_choice", "functions"},
      {R"({"messages":[{"role":"assistant","tool_calls":[{"type":"function","function":{"name":"f","arguments":{}}}]}]})",
       "messages[0].tool_calls[0]", "messages"},
      {R"({"messages":[{"role":"tool","content":null}]})", "messages[0].content is required", "messages"},
  };
  for (const auto& c : cases) {
    const api_error e = refused(c.body);
    EXPECT_NE(e.message.find(c.says), std::string::npos) << c.body << " -> " << e.message;
    EXPECT_EQ(e.param, c.param) << c.body;
  }
  EXPECT_NE(refused(R"({"prompt":"x",)" + tools_json + "}", false).message.find("/v1/chat/completions"), std::string::npos);
}

}  // namespace
}  // namespace fw::server
