// The series table (runtime/metrics/metric_series.hpp) is the one place a metric's name, type and
// help are written: these tests check the table itself, that the registry renders each entry as
// declared, that no source outside the table spells a series name, and that the docs list them all.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "runtime/metrics/metrics_registry.hpp"

namespace fw {
namespace {

std::vector<std::string> label_names(const metric_series& s) {
  std::vector<std::string> out;
  std::stringstream in(s.labels);
  for (std::string l; std::getline(in, l, ',');)
    if (!l.empty()) out.push_back(l);
  return out;
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

TEST(metric_series_test, every_entry_is_well_formed_and_named_once) {
  std::set<std::string> names;
  ASSERT_GT(all_series().size(), 40u);
  for (const metric_series* s : all_series()) {
    const std::string name = s->name;
    EXPECT_TRUE(names.insert(name).second) << name << " is in the table twice";
    EXPECT_TRUE(metrics_registry::valid_metric_name(name)) << name;
    EXPECT_EQ(name.rfind("flywheel:", 0), 0u) << name;
    EXPECT_FALSE(std::string(s->help).empty()) << name;
    const bool total = name.size() > 6 && name.compare(name.size() - 6, 6, "_total") == 0;
    EXPECT_EQ(total, s->type == series_type::counter) << name << ": counters, and only counters, end in _total";
    EXPECT_EQ(s->buckets != nullptr, s->type == series_type::histogram) << name;
    for (const auto& l : label_names(*s)) EXPECT_TRUE(metrics_registry::valid_label_name(l)) << name << ": " << l;
  }
}

TEST(metric_series_test, the_registry_renders_each_entry_with_its_type_help_and_labels) {
  metrics_registry r;
  for (const metric_series* s : all_series()) {
    metric_labels l = {{"model_name", "m"}};
    for (const auto& name : label_names(*s)) l.emplace_back(name, "x");
    switch (s->type) {
      case series_type::counter: r.counter(*s, l).inc(); break;
      case series_type::gauge: r.gauge(*s, l).set(1); break;
      case series_type::histogram: r.histogram(*s, l).observe(0.01); break;
    }
  }
  const std::string text = r.render();
  for (const metric_series* s : all_series()) {
    EXPECT_NE(text.find(std::string("# HELP ") + s->name + " " + s->help + "\n"), std::string::npos) << s->name;
    EXPECT_NE(text.find(std::string("# TYPE ") + s->name + " " + to_string(s->type) + "\n"), std::string::npos) << s->name;
  }
}

TEST(metric_series_test, no_source_outside_the_table_spells_a_series_name) {
  const std::filesystem::path root = FW_SOURCE_DIR;
  const std::regex inline_name("\"flywheel:[a-z]");
  std::string offenders;
  for (const char* dir : {"actors", "runtime", "tools"})
    for (const auto& e : std::filesystem::recursive_directory_iterator(root / dir)) {
      const auto ext = e.path().extension();
      if (ext != ".cpp" && ext != ".hpp") continue;
      if (e.path().filename() == "metric_series.hpp") continue;
      if (std::regex_search(read_file(e.path()), inline_name))
        offenders += std::filesystem::relative(e.path(), root).string() + "\n";
    }
  EXPECT_TRUE(offenders.empty()) << "series named outside runtime/metrics/metric_series.hpp:\n" << offenders;
}

TEST(metric_series_test, the_docs_list_every_series) {
  const std::string page = read_file(std::filesystem::path(FW_SOURCE_DIR) / "docs" / "console.md");
  ASSERT_FALSE(page.empty());
  for (const metric_series* s : all_series())
    EXPECT_NE(page.find(std::string("`") + s->name), std::string::npos) << s->name << " is not in docs/console.md's metric list";
}

}  // namespace
}  // namespace fw
