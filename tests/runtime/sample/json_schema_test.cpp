// json_schema -> grammar -> grammar_recognizer: which JSON texts a schema's grammar admits, which
// schemas are refused and why, and random walks through the grammar (a byte at a time among the
// bytes it allows) that always end in JSON the schema admits.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include <nlohmann/json.hpp>

#include "runtime/sample/grammar_recognizer.hpp"
#include "runtime/sample/json_schema.hpp"

namespace fw {
namespace {

std::shared_ptr<const grammar> compile(const std::string& schema) {
  auto g = json_schema_grammar(schema);
  EXPECT_TRUE(g) << (g ? "" : g.err().message);
  return g ? *g : nullptr;
}

/// The whole text is a sentence of the grammar.
bool admits(const std::shared_ptr<const grammar>& g, const std::string& text) {
  grammar_recognizer r(g);
  return r.feed(text) && r.can_end();
}

std::string refusal(const std::string& schema) {
  auto g = json_schema_grammar(schema);
  return g ? "" : g.err().message;
}

TEST(json_schema, an_object_admits_its_properties_in_order_with_the_required_ones) {
  const auto g = compile(R"({"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"},
      "tags":{"type":"array","items":{"type":"string"}}},"required":["name","age"],"additionalProperties":false})");
  EXPECT_TRUE(admits(g, R"({"name":"Ada","age":36})"));
  EXPECT_TRUE(admits(g, R"({"name":"Ada","age":36,"tags":["x","y"]})"));
  EXPECT_TRUE(admits(g, "{\n  \"name\": \"A\\\"d\\u00e9\",\n  \"age\": -7\n}"));
  EXPECT_FALSE(admits(g, R"({"age":36,"name":"Ada"})"));  // out of order
  EXPECT_FALSE(admits(g, R"({"name":"Ada"})"));           // age is required
  EXPECT_FALSE(admits(g, R"({"name":"Ada","age":3.5})"));  // an integer
  EXPECT_FALSE(admits(g, R"({"name":"Ada","age":036})"));  // no leading zero
  EXPECT_FALSE(admits(g, R"({"name":"Ada","age":36,"x":1})"));
  EXPECT_FALSE(admits(g, R"({"name":"Ada","age":36,})"));
  EXPECT_FALSE(admits(g, R"( {"name":"Ada","age":36})"));  // nothing before the root
  EXPECT_FALSE(admits(g, "{\"name\":\"A\nB\",\"age\":1}"));  // a raw control byte in a string
  EXPECT_FALSE(admits(g, "{\"name\":\"A\xc3\",\"age\":1}"));  // a UTF-8 character cut short
  EXPECT_FALSE(admits(g, "{\"name\":\"\xed\xa0\x80\",\"age\":1}"));  // a surrogate's encoding
  EXPECT_TRUE(admits(g, "{\"name\":\"\xe6\x97\xa5\",\"age\":1}"));
  grammar_recognizer r(g);
  ASSERT_TRUE(r.feed(R"({"name":"Ada","age":36)"));
  EXPECT_FALSE(r.can_end());
  ASSERT_TRUE(r.feed("}"));
  EXPECT_TRUE(r.done());  // nothing can follow the root
  EXPECT_FALSE(r.feed(" "));
}

TEST(json_schema, optional_properties_may_each_be_left_out_and_commas_follow) {
  const auto g = compile(R"({"type":"object","properties":{"a":{"type":"boolean"},"b":{"type":"null"},
      "c":{"type":"number"}}})");
  for (const char* ok : {"{}", R"({"a":true})", R"({"b":null})", R"({"c":1e5})", R"({"a":false,"c":-0.25E-3})",
                         R"({"b":null,"c":0})", R"({"a":true,"b":null,"c":12.5})"})
    EXPECT_TRUE(admits(g, ok)) << ok;
  for (const char* bad : {R"({,"a":true})", R"({"c":1,"a":true})", R"({"a":1})", R"({"c":1.})", R"({"c":.5})",
                          R"({"c":+1})", R"({"a":true"b":null})"})
    EXPECT_FALSE(admits(g, bad)) << bad;
}

TEST(json_schema, enums_consts_unions_and_type_lists) {
  const auto g = compile(R"({"type":"object","properties":{
      "color":{"enum":["red","green",3,null]},"v":{"const":{"k":[1,"é"]}},
      "maybe":{"anyOf":[{"type":"string","maxLength":2},{"type":"null"}]},
      "either":{"type":["integer","boolean"]}},"required":["color","v","maybe","either"]})");
  EXPECT_TRUE(admits(g, R"({"color":"green","v":{"k":[1,"é"]},"maybe":"ab","either":true})"));
  EXPECT_TRUE(admits(g, R"({"color":3,"v":{"k":[1,"é"]},"maybe":null,"either":-12})"));
  EXPECT_TRUE(admits(g, R"({"color":null,"v":{"k":[1,"é"]},"maybe":"\n","either":0})"));
  EXPECT_FALSE(admits(g, R"({"color":"blue","v":{"k":[1,"é"]},"maybe":null,"either":0})"));
  EXPECT_FALSE(admits(g, R"({"color":3,"v":{"k":[2,"é"]},"maybe":null,"either":0})"));
  EXPECT_FALSE(admits(g, R"({"color":3,"v":{"k":[1,"é"]},"maybe":"abc","either":0})"));  // maxLength 2
  EXPECT_FALSE(admits(g, R"({"color":3,"v":{"k":[1,"é"]},"maybe":null,"either":1.5})"));
}

TEST(json_schema, arrays_count_their_items_and_tuples_take_their_prefix) {
  const auto g = compile(R"({"type":"array","items":{"type":"integer"},"minItems":2,"maxItems":3})");
  EXPECT_FALSE(admits(g, "[]"));
  EXPECT_FALSE(admits(g, "[1]"));
  EXPECT_TRUE(admits(g, "[1, 2]"));
  EXPECT_TRUE(admits(g, "[1,2,3]"));
  EXPECT_FALSE(admits(g, "[1,2,3,4]"));
  const auto any = compile(R"({"type":"array"})");
  EXPECT_TRUE(admits(any, "[]"));
  EXPECT_TRUE(admits(any, R"([1,"a",{"b":[null,true]},[],{}])"));
  EXPECT_FALSE(admits(any, "[1,]"));
  const auto tuple = compile(R"({"type":"array","prefixItems":[{"type":"string"},{"type":"integer"}],"items":false})");
  EXPECT_TRUE(admits(tuple, R"(["a",1])"));
  EXPECT_TRUE(admits(tuple, R"(["a"])"));
  EXPECT_FALSE(admits(tuple, R"([1,"a"])"));
  EXPECT_FALSE(admits(tuple, R"(["a",1,2])"));
  const auto strings = compile(R"({"type":"string","minLength":2,"maxLength":4})");
  EXPECT_FALSE(admits(strings, R"("a")"));
  EXPECT_TRUE(admits(strings, R"("a\tb")"));  // an escape is one character
  EXPECT_TRUE(admits(strings, R"("abcd")"));
  EXPECT_FALSE(admits(strings, R"("abcde")"));
}

TEST(json_schema, references_resolve_into_defs_and_may_recurse) {
  // What pydantic writes for a model with a nested model and an optional self-reference.
  const auto g = compile(R"({"$defs":{"Node":{"properties":{"name":{"title":"Name","type":"string"},
      "children":{"items":{"$ref":"#/$defs/Node"},"title":"Children","type":"array"}},
      "required":["name","children"],"title":"Node","type":"object","additionalProperties":false}},
      "properties":{"root":{"$ref":"#/$defs/Node"},"note":{"anyOf":[{"type":"string"},{"type":"null"}],
      "default":null,"title":"Note"}},"required":["root"],"title":"Tree","type":"object"})");
  EXPECT_TRUE(admits(g, R"({"root":{"name":"a","children":[{"name":"b","children":[]}]}})"));
  EXPECT_TRUE(admits(g, R"({"root":{"name":"a","children":[]},"note":null})"));
  EXPECT_FALSE(admits(g, R"({"root":{"name":"a","children":[{"name":"b"}]}})"));
  const auto self = compile(R"({"type":"object","properties":{"next":{"$ref":"#"}}})");
  EXPECT_TRUE(admits(self, R"({"next":{"next":{"next":{}}}})"));
  const auto map = compile(R"({"type":"object","additionalProperties":{"type":"integer"}})");
  EXPECT_TRUE(admits(map, R"({"x":1,"y y":-2})"));
  EXPECT_TRUE(admits(map, "{}"));
  EXPECT_FALSE(admits(map, R"({"x":"1"})"));
  EXPECT_TRUE(admits(compile("{}"), R"([{"any":["thing",1.5e3]}])"));
  EXPECT_TRUE(admits(compile("true"), "null"));
}

TEST(json_schema, big_enums_typed_enums_bare_array_bounds_and_no_surrogate_escapes) {
  std::string values;
  for (int i = 0; i < 3000; ++i) values += (i ? "," : "") + std::string("\"item-") + std::to_string(i) + "\"";
  const auto big = compile(R"({"enum":[)" + values + "]}");  // one way at a time: a prefix tree
  EXPECT_TRUE(admits(big, R"("item-2999")"));
  EXPECT_TRUE(admits(big, R"("item-3")"));
  EXPECT_FALSE(admits(big, R"("item-3000")"));
  // Two long values sharing a long prefix: the prefix tree recurses per branch point, not per byte.
  const std::string long_a(200000, 'a');
  const auto shared = compile(R"({"enum":[")" + long_a + R"(",")" + long_a + R"(b"]})");
  EXPECT_TRUE(admits(shared, "\"" + long_a + "b\""));
  EXPECT_FALSE(admits(shared, "\"" + long_a + "c\""));
  const auto typed = compile(R"({"type":"string","enum":["a",1,"b"]})");
  EXPECT_TRUE(admits(typed, R"("b")"));
  EXPECT_FALSE(admits(typed, "1"));
  EXPECT_NE(refusal(R"({"type":"string","const":3})").find("no value of enum / const"), std::string::npos);
  const auto bare = compile(R"({"minItems":2,"maxItems":2})");
  EXPECT_TRUE(admits(bare, R"([1,"x"])"));
  EXPECT_FALSE(admits(bare, "[1]"));
  const auto s = compile(R"({"type":"string"})");
  EXPECT_TRUE(admits(s, R"("\u00e9\uFFFD")"));
  EXPECT_FALSE(admits(s, R"("\ud83d\ude00")"));  // written as UTF-8 instead
  EXPECT_FALSE(admits(s, R"("\uDFFF")"));
  EXPECT_FALSE(admits(compile(R"({"type":"integer"})"), "1234567890123456"));  // 16 digits: beyond a double's exact range
  EXPECT_TRUE(admits(compile(R"({"type":"integer"})"), "-123456789012345"));
}

TEST(json_schema, what_it_cannot_honour_is_refused_by_name) {
  EXPECT_NE(refusal(R"({"type":"string","uniqueItems":true})").find("\"uniqueItems\" is not supported"), std::string::npos);
  EXPECT_NE(refusal(R"({"type":"string","pattern":"(a"})").find("/pattern: regex at offset 2"), std::string::npos);
  EXPECT_NE(refusal(R"({"type":"string","pattern":"a","maxLength":3})").find("pattern together"), std::string::npos);
  EXPECT_NE(refusal(R"({"type":"object","properties":{"n":{"type":"integer","minimum":0}}})").find("/properties/n"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"type":"object","properties":{"n":{"type":"integer","minimum":0}}})").find("\"minimum\""),
            std::string::npos);
  EXPECT_NE(refusal("false").find("admits no value"), std::string::npos);
  EXPECT_NE(refusal(R"({"$ref":"#/$defs/Missing"})").find("names nothing"), std::string::npos);
  EXPECT_NE(refusal(R"({"$ref":"other.json#/a"})").find("only references into this schema"), std::string::npos);
  EXPECT_NE(refusal(R"({"type":"date"})").find("unknown type"), std::string::npos);
  EXPECT_NE(refusal(R"({"allOf":[{"type":"string"},{"maxLength":3}]})").find("allOf"), std::string::npos);
  EXPECT_NE(refusal(R"({"type":"array","minItems":3,"maxItems":2})").find("minItems"), std::string::npos);
  EXPECT_NE(refusal(R"({"type":"string","maxLength":100000})").find("maxLength"), std::string::npos);
  EXPECT_NE(refusal("{\"type\":").find("not valid JSON"), std::string::npos);
  EXPECT_NE(refusal(R"({"properties":{"a":{}},"additionalProperties":false,"required":["b"]})").find("\"b\""),
            std::string::npos);
  for (const char* loop : {R"({"$ref":"#"})", R"({"anyOf":[{"$ref":"#"},{"type":"null"}]})",
                           R"({"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"allOf":[{"$ref":"#/$defs/a"}]}},"$ref":"#/$defs/a"})"})
    EXPECT_NE(refusal(loop).find("reaches itself before writing anything"), std::string::npos) << loop;
  EXPECT_EQ(refusal(R"({"type":"array","items":{"$ref":"#"}})"), "");  // recursion inside a value is fine
  EXPECT_NE(refusal(R"({"const":)" + std::string(400000, '[') + std::string(400000, ']') + "}").find("nests deeper"),
            std::string::npos);
  std::string deep = "{}";
  for (int i = 0; i < 100; ++i) deep = R"({"type":"array","items":)" + deep + "}";
  EXPECT_NE(refusal(deep).find("deeper"), std::string::npos);
}

TEST(json_schema, a_string_s_plain_bytes_leave_the_state_as_it_is_and_structure_does_not) {
  const auto g = compile(R"({"type":"object","properties":{"s":{"type":"string"}},"required":["s"]})");
  grammar_recognizer r(g);
  byte_set ok, same;
  r.next_bytes(&ok, &same);
  EXPECT_TRUE(ok.has('{'));
  EXPECT_FALSE(ok.has('['));
  EXPECT_FALSE(same.has('{'));
  ASSERT_TRUE(r.feed(R"({"s":"ab)"));
  r.next_bytes(&ok, &same);
  for (char c : std::string("azAZ09 .,{}:")) EXPECT_TRUE(same.has(static_cast<uint8_t>(c))) << c;
  EXPECT_TRUE(ok.has(0xc3));  // a UTF-8 character's first byte: the state is inside the character
  EXPECT_FALSE(same.has(0xc3));
  EXPECT_FALSE(ok.has(0x80));  // not a first byte
  EXPECT_FALSE(ok.has(0xc0));  // never in UTF-8
  EXPECT_TRUE(ok.has('"'));
  EXPECT_FALSE(same.has('"'));
  EXPECT_TRUE(ok.has('\\'));
  EXPECT_FALSE(same.has('\\'));
  EXPECT_FALSE(ok.has('\n'));
  grammar_recognizer copy = r;
  ASSERT_TRUE(copy.feed("hello \xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"));  // e-acute, euro, an emoji: whole characters
  EXPECT_TRUE(copy == r);
  EXPECT_TRUE(r.accepts("x\"}"));
  EXPECT_FALSE(r.accepts("x\"}}"));
  EXPECT_TRUE(copy == r);  // accepts() changes nothing
}

// Random walks: a byte at a time among those the grammar allows, leaning to end once it can.
// Whatever the walk writes parses as JSON and holds what the schema says.
TEST(json_schema, random_walks_write_json_the_schema_admits) {
  const auto g = compile(R"({"type":"object","properties":{"id":{"type":"integer"},
      "name":{"type":"string","maxLength":8},"score":{"type":"number"},
      "tags":{"type":"array","items":{"enum":["a","b"]},"maxItems":3},
      "owner":{"anyOf":[{"type":"null"},{"type":"object","properties":{"x":{"type":"boolean"}},"required":["x"]}]}},
      "required":["id","tags","owner"]})");
  std::mt19937 rng(7);
  for (int walk = 0; walk < 300; ++walk) {
    grammar_recognizer r(g);
    std::string text;
    while (!r.done()) {
      ASSERT_LT(text.size(), 4000u) << text;
      if (r.can_end() && rng() % 2) break;
      byte_set ok, same;
      r.next_bytes(&ok, &same);
      std::vector<uint8_t> choices;
      for (unsigned c = 0; c < 256; ++c)
        if (ok.has(static_cast<uint8_t>(c)) && (c < 0x80 || c == 0xc3))  // keep the text valid UTF-8 for the parser
          choices.push_back(static_cast<uint8_t>(c));
      ASSERT_FALSE(choices.empty()) << text;
      uint8_t c = choices[rng() % choices.size()];
      if (c == 0xc3) {
        ASSERT_TRUE(r.feed("\xc3\xa9"));
        text += "\xc3\xa9";
        continue;
      }
      ASSERT_TRUE(r.feed(static_cast<char>(c)));
      text += static_cast<char>(c);
    }
    nlohmann::json j;
    ASSERT_NO_THROW(j = nlohmann::json::parse(text)) << text;
    ASSERT_TRUE(j.is_object()) << text;
    EXPECT_TRUE(j.at("id").is_number_integer()) << text;
    EXPECT_TRUE(j.at("tags").is_array() && j["tags"].size() <= 3) << text;
    for (const auto& t : j["tags"]) EXPECT_TRUE(t == "a" || t == "b") << text;
    EXPECT_TRUE(j.at("owner").is_null() || j["owner"].at("x").is_boolean()) << text;
    if (j.contains("name")) {
      EXPECT_TRUE(j["name"].is_string()) << text;
    }
    if (j.contains("score")) {
      EXPECT_TRUE(j["score"].is_number()) << text;
    }
    for (const auto& [k, v] : j.items()) EXPECT_TRUE(k == "id" || k == "name" || k == "score" || k == "tags" || k == "owner");
  }
}

}  // namespace
}  // namespace fw
