// The documentation's shape: README is a front page (the two set-up commands first, at most 200
// lines) that links every page of docs/; every section the single-page README had (2026-12-04)
// has a home in docs/; every relative link and anchor in README and docs/ resolves.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;
const fs::path root = FW_SOURCE_DIR;

std::string read_file(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

/// GitHub's anchor of a heading: lower case, punctuation but '-' and '_' dropped, spaces -> '-'.
std::string slug(std::string h) {
  std::string out;
  for (unsigned char c : h) {
    if (c == '`' || c == '*') continue;
    if (std::isalnum(c) || c == '-' || c == '_' || c >= 0x80) out += static_cast<char>(std::tolower(c));
    else if (c == ' ') out += '-';
  }
  return out;
}

/// Headings outside code fences, and their anchors.
std::vector<std::string> headings(const std::string& text) {
  std::vector<std::string> out;
  bool code = false;
  for (const auto& l : lines_of(text)) {
    if (l.rfind("```", 0) == 0) code = !code;
    if (!code && l.size() > 2 && l[0] == '#') out.push_back(l);
  }
  return out;
}

std::vector<fs::path> pages() {
  std::vector<fs::path> out{root / "README.md"};
  for (const auto& e : fs::directory_iterator(root / "docs"))
    if (e.path().extension() == ".md") out.push_back(e.path());
  return out;
}

TEST(docs_test, readme_is_a_front_page_with_the_two_commands_first) {
  const auto lines = lines_of(read_file(root / "README.md"));
  ASSERT_FALSE(lines.empty());
  EXPECT_LE(lines.size(), 200u) << "README is the front page; topics go to docs/";
  std::vector<std::string> blocks;  // the first line of each code block, in order
  bool code = false;
  for (size_t i = 0; i + 1 < lines.size() && blocks.size() < 2; ++i) {
    if (lines[i].rfind("```", 0) != 0) continue;
    if (!code) blocks.push_back(lines[i + 1]);
    code = !code;
  }
  ASSERT_EQ(blocks.size(), 2u);
  EXPECT_EQ(blocks[0], "scripts/run.sh");
  EXPECT_EQ(blocks[1], "scripts/test.sh");
}

TEST(docs_test, every_section_of_the_single_page_readme_has_a_home_in_docs) {
  const std::vector<std::string> old = {
      "## The console", "### Metrics", "## Using it", "## Serving", "## Models", "## Quantization",
      "## Plugins", "## Configuration", "## The actor runtime", "### Prefix cache", "## Prefill/decode separation",
      "## Supervision and rollout", "## Several machines", "## Speculative decoding", "## GPU", "## Layout",
      "## Correctness against llama.cpp", "## CPU performance", "### Kernels", "### Benchmark", "### Against llama.cpp"};
  std::set<std::string> have;
  for (const auto& p : pages())
    if (p.parent_path().filename() == "docs")
      for (const auto& h : headings(read_file(p))) have.insert(h);
  for (const auto& h : old) EXPECT_TRUE(have.count(h)) << h << " has no home in docs/";
}

TEST(docs_test, the_front_page_links_every_page_and_every_link_resolves) {
  std::map<fs::path, std::set<std::string>> anchors;
  for (const auto& p : pages())
    for (const auto& h : headings(read_file(p))) anchors[fs::weakly_canonical(p)].insert(slug(h.substr(h.find(' ') + 1)));
  const std::string readme = read_file(root / "README.md");
  for (const auto& p : pages())
    if (p.filename() != "README.md" || p.parent_path().filename() == "docs") {
      const std::string rel = "docs/" + p.filename().string();
      if (p.parent_path().filename() == "docs" && p.filename() != "README.md") {
        EXPECT_NE(readme.find("(" + rel + ")"), std::string::npos) << "README does not link " << rel;
      }
    }
  const std::regex link(R"(\]\(([^)\s]+)\))");
  for (const auto& p : pages()) {
    const std::string text = read_file(p);
    bool code = false;
    for (const auto& l : lines_of(text)) {
      if (l.rfind("```", 0) == 0) code = !code;
      if (code) continue;
      for (std::sregex_iterator it(l.begin(), l.end(), link), end; it != end; ++it) {
        const std::string target = (*it)[1];
        if (target.find("://") != std::string::npos || target.rfind("mailto:", 0) == 0) continue;
        const auto hash = target.find('#');
        const std::string file = target.substr(0, hash);
        const fs::path dest = file.empty() ? p : fs::weakly_canonical(p.parent_path() / file);
        EXPECT_TRUE(fs::exists(dest)) << p.filename() << ": link to " << target << " does not resolve";
        if (hash != std::string::npos && dest.extension() == ".md") {
          EXPECT_TRUE(anchors[fs::weakly_canonical(dest)].count(target.substr(hash + 1)))
              << p.filename() << ": no heading for " << target;
        }
      }
    }
  }
}

}  // namespace
