// docs/config-reference.md is what the schema generates (with conf/default.toml's comments): a key
// added, removed or re-ranged without regenerating it fails here. Also: every key of every section
// is in the page with a description, so the shipped defaults document every key.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "runtime/config/config_reference.hpp"

namespace fw {
namespace {

std::string read_file(const std::filesystem::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

TEST(config_reference_test, the_docs_page_is_what_the_schema_generates) {
  const std::filesystem::path root = FW_SOURCE_DIR;
  const std::string want = config_reference_markdown(read_file(root / "conf" / "default.toml"));
  const std::string have = read_file(root / "docs" / "config-reference.md");
  EXPECT_EQ(have, want) << "docs/config-reference.md is out of date: run "
                           "build/tools/flywheel config-reference > docs/config-reference.md";
}

TEST(config_reference_test, every_key_has_a_kind_a_default_and_a_description) {
  const std::string md = config_reference_markdown(read_file(std::filesystem::path(FW_SOURCE_DIR) / "conf" / "default.toml"));
  std::istringstream in(md);
  int rows = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("| `", 0) != 0) continue;
    ++rows;
    // | `key` | `default` | allowed | what it does |
    EXPECT_EQ(line.find("|  |"), std::string::npos) << "an empty column: " << line;
    EXPECT_NE(line.substr(line.size() - 3), "|  |") << line;
  }
  EXPECT_GT(rows, 60);
}

}  // namespace
}  // namespace fw
