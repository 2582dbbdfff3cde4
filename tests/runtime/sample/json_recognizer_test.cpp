// json_recognizer: JSON object texts accepted byte by byte, everything else refused at the first
// byte that cannot continue one, and complete() only once the root object is closed.
#include <gtest/gtest.h>

#include <string>

#include "runtime/sample/json_recognizer.hpp"

namespace fw {
namespace {

// Where the text is refused: the index of the first byte feed() rejects, or -1 if none is.
int refused_at(const std::string& text, json_recognizer* out = nullptr) {
  json_recognizer r;
  for (size_t i = 0; i < text.size(); ++i) {
    const json_recognizer before = r;
    if (!r.feed(text[i])) {
      EXPECT_EQ(r.depth(), before.depth()) << "a refused byte leaves the state as it was";
      EXPECT_EQ(r.complete(), before.complete());
      return static_cast<int>(i);
    }
  }
  if (out) *out = r;
  return -1;
}

TEST(json_recognizer, object_texts_are_accepted_and_complete_at_their_last_brace) {
  const std::string valid[] = {
      "{}",
      " \n{ }\t",
      R"({"a":1})",
      R"({"name": "Ada", "age": 36, "tags": ["x", "y"], "ok": true, "no": false, "none": null})",
      R"({"n": [0, -0, 12, -3.25, 1e9, 2E-3, 0.5e+10, -0.0]})",
      R"({"s": "quote \" backslash \\ slash \/ \b\f\n\r\t \u00e9 \uD83D\uDE00", "é": "ü"})",
      R"({"deep": {"a": [{"b": [[], {}, [1, [2, [3]]]]}]}})",
      R"({"k":[]})",
  };
  for (const auto& t : valid) {
    json_recognizer r;
    ASSERT_EQ(refused_at(t, &r), -1) << t;
    EXPECT_TRUE(r.complete()) << t;
    EXPECT_EQ(r.depth(), 0) << t;
    // Every proper prefix ending before the root's last brace is accepted and not complete.
    const size_t close = t.rfind('}');
    for (size_t n = 0; n < close; ++n) {
      json_recognizer p;
      ASSERT_EQ(refused_at(t.substr(0, n), &p), -1) << t.substr(0, n);
      EXPECT_FALSE(p.complete()) << t.substr(0, n);
    }
  }
}

TEST(json_recognizer, malformed_texts_are_refused_at_the_first_bad_byte) {
  struct c {
    std::string text;
    int at;
  };
  const c cases[] = {
      {"[1]", 0},                 // the root is an object
      {"\"a\"", 0},
      {"x", 0},
      {"{a:1}", 1},               // keys are strings
      {R"({"a" 1})", 5},          // the colon
      {R"({"a":})", 5},
      {R"({"a":1,})", 7},         // no trailing comma
      {R"({"a":[1,]})", 8},
      {R"({"a":01})", 6},         // no leading zero
      {R"({"a":+1})", 5},
      {R"({"a":.5})", 5},
      {R"({"a":1.})", 7},
      {R"({"a":1e})", 7},
      {R"({"a":-})", 6},
      {R"({"a":tru})", 8},
      {R"({"a":nul1})", 8},
      {R"({"a":"\x"})", 7},       // unknown escape
      {R"({"a":"\u12g4"})", 10},
      {std::string("{\"a\":\"\x01\"}"), 6},  // control bytes in strings
      {R"({"a":1]})", 6},         // mismatched close
      {R"({"a":[1}})", 7},
      {R"({} {})", 3},            // one root
      {R"({}})", 2},
  };
  for (const auto& x : cases) EXPECT_EQ(refused_at(x.text), x.at) << x.text;
  // Nesting beyond max_depth is refused.
  std::string deep = "{\"a\":";
  for (int i = 1; i < json_recognizer::max_depth; ++i) deep += "[";
  EXPECT_EQ(refused_at(deep), -1);
  EXPECT_EQ(refused_at(deep + "["), static_cast<int>(deep.size()));
}

TEST(json_recognizer, a_number_ends_at_the_byte_after_it) {
  json_recognizer r;
  ASSERT_TRUE(r.feed(R"({"a":12)"));
  EXPECT_FALSE(r.complete());
  json_recognizer more = r;
  EXPECT_TRUE(more.feed('3'));         // the number goes on
  EXPECT_TRUE(r.feed('}'));            // or ends with the object
  EXPECT_TRUE(r.complete());
  EXPECT_TRUE(r.feed(" \n"));          // whitespace after the root
  EXPECT_FALSE(r.feed('x'));
}

}  // namespace
}  // namespace fw
