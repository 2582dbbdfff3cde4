// The console's :format argument parser (no model needed): every kind sets exactly its
// constraint, a schema or grammar is read from @FILE, what the engine would refuse is refused here
// with the reason (the grammar's line and column), and apply() turns the draft off only when
// something constrains the answer.
#include "tools/console/output_format.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include <unistd.h>

namespace fw::console {
namespace {

std::string temp_file(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("fw_output_format_" + std::to_string(::getpid()) + "_" + name);
  std::ofstream(path, std::ios::binary) << text;
  return path.string();
}

TEST(output_format_test, every_kind_sets_its_constraint_only) {
  auto f = output_format::parse("json");
  ASSERT_TRUE(f) << f.err().message;
  EXPECT_TRUE(f->constraint.json_object);
  EXPECT_TRUE(f->constrained());
  EXPECT_EQ(f->description, "a JSON object");

  f = output_format::parse("  regex   [0-9]{3}-[a-z]+ ");
  ASSERT_TRUE(f) << f.err().message;
  EXPECT_EQ(f->constraint.regex, "[0-9]{3}-[a-z]+");
  EXPECT_FALSE(f->constraint.json_object);

  f = output_format::parse("choice yes | no|maybe later");
  ASSERT_TRUE(f) << f.err().message;
  EXPECT_EQ(f->constraint.choices, (std::vector<std::string>{"yes", "no", "maybe later"}));

  const std::string schema = R"({"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]})";
  f = output_format::parse("schema " + schema);
  ASSERT_TRUE(f) << f.err().message;
  EXPECT_EQ(f->constraint.json_schema, schema);
  EXPECT_TRUE(f->constraint.grammar.empty());

  const std::string gbnf = "root ::= \"a\" digits\ndigits ::= [0-9]+\n";
  f = output_format::parse("grammar @" + temp_file("g.gbnf", gbnf));
  ASSERT_TRUE(f) << f.err().message;
  EXPECT_EQ(f->constraint.grammar, gbnf);
  EXPECT_NE(f->description.find("g.gbnf"), std::string::npos) << f->description;

  for (const char* off : {"off", "text", " off "}) {
    f = output_format::parse(off);
    ASSERT_TRUE(f) << off;
    EXPECT_FALSE(f->constrained()) << off;
    EXPECT_EQ(f->description, "plain text");
  }
}

TEST(output_format_test, what_the_engine_would_refuse_is_refused_with_the_reason) {
  const std::pair<std::string, std::string> bad[] = {
      {"yaml", "usage: :format"},
      {"json {\"type\":\"object\"}", "takes nothing after it"},
      {"off now", "takes nothing after it"},
      {"schema", "needs its text or @FILE"},
      {"grammar @/nonexistent/fw.gbnf", "cannot read /nonexistent/fw.gbnf"},
      {"schema {\"type\":", "schema"},
      {"grammar root ::= \"a\" undefined_rule", "undefined_rule"},
      {"regex", "needs the expression"},
      {"regex (ab", "regex"},
      {"choice yes", "two or more choices"},
      {"choice yes||no", "an empty choice"},
      {"choice yes|", "an empty choice"},
  };
  for (const auto& [args, want] : bad) {
    auto f = output_format::parse(args);
    ASSERT_FALSE(f) << args;
    EXPECT_NE(f.err().message.find(want), std::string::npos) << args << ": " << f.err().message;
  }
  // The grammar's own position, from the file.
  auto f = output_format::parse("grammar @" + temp_file("bad.gbnf", "root ::= x\nx ::= \"a\" | @\n"));
  ASSERT_FALSE(f);
  EXPECT_NE(f.err().message.find("line 2, column"), std::string::npos) << f.err().message;
}

TEST(output_format_test, apply_turns_the_draft_off_only_under_a_constraint) {
  sampling_params p;
  p.max_draft_k = 5;
  p.temperature = 0.3f;
  output_format{}.apply(p);
  EXPECT_EQ(p.max_draft_k, 5);
  EXPECT_FALSE(p.json_object);

  auto f = output_format::parse("choice red|green");
  ASSERT_TRUE(f);
  f->apply(p);
  EXPECT_EQ(p.max_draft_k, 0);
  EXPECT_EQ(p.choices, (std::vector<std::string>{"red", "green"}));
  EXPECT_EQ(p.temperature, 0.3f) << "sampling settings stay";
  EXPECT_TRUE(p.validate());
}

}  // namespace
}  // namespace fw::console
