#include "runtime/config/config_reference.hpp"

#include <map>
#include <regex>
#include <sstream>
#include <utility>
#include <vector>

#include "runtime/config/config_schema.hpp"

namespace fw {
namespace {

/// The comment block right above each `key = ...` of each [table] / [[table]] in a TOML text.
std::map<std::pair<std::string, std::string>, std::string> key_comments(std::string_view text) {
  std::map<std::pair<std::string, std::string>, std::string> out;
  std::istringstream in{std::string(text)};
  // A comment describes the keys that follow it up to the next blank line or comment (a group
  // such as pool_tokens / pool_mib shares one).
  std::string table, comment, last_listed;
  bool after_key = false;
  std::map<std::string, std::string> listed;
  const std::regex commented_key(R"( ?([a-z_]+) = .*)");
  const std::regex listed_key(R"(   ([a-z_]+) +([^=\s].*))");
  const std::regex continued(R"(     +(\S.*))");
  for (std::string line; std::getline(in, line);) {
    const auto first = line.find_first_not_of(" \t");
    if (first == std::string::npos) {
      comment.clear();
      continue;
    }
    line = line.substr(first);
    if (line[0] == '#') {
      std::string c = line.substr(1);
      std::smatch m;
      if (std::regex_match(c, m, commented_key)) {  // "# pool_mib = 512": a key of the group
        if (!comment.empty()) out.emplace(std::make_pair(table, m[1].str()), comment);
        after_key = true;
        continue;
      }
      if (std::regex_match(c, m, listed_key)) {  // "#   kv_pool_mib   this device's ...": a key list
        last_listed = m[1].str();
        listed[last_listed] = m[2].str();
      } else if (!last_listed.empty() && std::regex_match(c, m, continued)) {
        listed[last_listed] += " " + m[1].str();
      } else {
        last_listed.clear();
      }
      if (after_key) comment.clear();
      after_key = false;
      if (!c.empty() && c[0] == ' ') c.erase(0, 1);
      comment += (comment.empty() ? "" : " ") + c;
      continue;
    }
    last_listed.clear();
    after_key = false;
    if (line[0] == '[') {
      const auto open = line.find_first_not_of('[');
      const auto close = line.find(']');
      table = line.substr(open, close - open);
      comment.clear();
      continue;
    }
    const auto eq = line.find('=');
    if (eq != std::string::npos) {
      std::string key = line.substr(0, eq);
      key.erase(key.find_last_not_of(" \t") + 1);
      if (!comment.empty()) out[{table, key}] = comment;
      after_key = true;
      continue;
    }
    comment.clear();
  }
  // Keys described only in a list ([[devices]], [[plugins.load]]): under the key alone.
  for (auto& [key, text] : listed) out.emplace(std::make_pair(std::string(), key), text);
  return out;
}

std::string cell(std::string s) {
  std::string out;
  for (char c : s) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

template <class T>
void table(std::ostringstream& md, const std::string& name, const std::vector<config_schema::field<T>>& fields,
           const T& defaults, const std::map<std::pair<std::string, std::string>, std::string>& comments) {
  md << "| key | default | allowed | what it does |\n| --- | --- | --- | --- |\n";
  for (const auto& f : fields) {
    const std::string key(f.key);
    auto it = comments.find({name, key});
    if (it == comments.end()) it = comments.find({std::string(), key});
    md << "| `" << key << "` | `" << cell(f.print(defaults)) << "` | " << cell(f.allowed) << " | "
       << (it == comments.end() ? std::string() : cell(it->second)) << " |\n";
  }
}

}  // namespace

std::string config_reference_markdown(std::string_view default_toml) {
  const auto comments = key_comments(default_toml);
  std::ostringstream md;
  md << "# flywheel: Configuration reference\n\n"
        "[Back to the front page](../README.md) · [All pages](README.md) · [Configuration](configuration.md)\n\n"
        "Generated from the schema the parser checks with (`runtime/config/config_schema.cpp`) by\n"
        "`build/tools/flywheel config-reference > docs/config-reference.md`; \"what it does\" is the comment\n"
        "above the key in `conf/default.toml`. A test fails when this page and the schema disagree.\n"
        "Defaults are the built-in ones (no `--config`).\n";
  const config defaults{};
  for (const auto& s : config_schema::sections()) {
    const std::string name(s.name);
    md << "\n## [" << name << "]\n\n";
    table(md, name, s.fields, defaults, comments);
    for (const auto& a : s.arrays) md << "\n`[[" << name << "." << a << "]]` entries: see below.\n";
  }
  md << "\n## [[devices]]\n\nEach entry is one device; none: one CPU device with role \"both\".\n\n";
  table(md, "devices", config_schema::device_fields(), device_section{}, comments);
  md << "\n## [[plugins.load]]\n\nEach entry loads one plugin at start.\n\n";
  table(md, "plugins.load", config_schema::plugin_load_fields(), plugin_load{}, comments);
  return md.str();
}

}  // namespace fw
