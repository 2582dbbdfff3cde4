// Every shipped config parses, passes the composition root's device check, and sets only keys
// that some code reads: a config key or example that nothing honours is a bug (DEVELOPERS.md).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/config/config.hpp"
#include "runtime/setup/runtime_parts.hpp"

namespace {

namespace fs = std::filesystem;

std::vector<fs::path> shipped_configs() {
  const fs::path root(FW_SOURCE_DIR);
  std::vector<fs::path> out{root / "conf/default.toml"};
  for (const auto& e : fs::directory_iterator(root / "conf/examples"))
    if (e.path().extension() == ".toml") out.push_back(e.path());
  return out;
}

/// The engine's sources outside the config parser and the tests, as (path, text).
std::vector<std::pair<std::string, std::string>> consumer_sources() {
  const fs::path root(FW_SOURCE_DIR);
  std::vector<std::pair<std::string, std::string>> out;
  for (const char* top : {"runtime", "actors", "tools"}) {
    for (const auto& e : fs::recursive_directory_iterator(root / top)) {
      const std::string rel = fs::relative(e.path(), root).string();
      if (!e.is_regular_file() || rel.rfind("runtime/config/", 0) == 0) continue;
      if (e.path().extension() != ".cpp" && e.path().extension() != ".hpp") continue;
      std::ifstream in(e.path());
      std::stringstream text;
      text << in.rdbuf();
      out.emplace_back(rel, text.str());
    }
  }
  return out;
}

/// Whether some source reads `key` of a section: it accesses ".key" or "->key" and names the
/// section (its struct or the config member), so a field nobody reads is found.
bool consumed(const std::vector<std::pair<std::string, std::string>>& sources, const std::string& section_marker,
              const std::string& struct_marker, const std::string& key) {
  // Keys read through a helper of their section (sections/*.hpp) count where the helper is called.
  if (section_marker == "plugins" && key == "dir") return consumed(sources, "plugins", "plugins_section", "file_of");
  const std::regex access("(\\.|->)" + key + "\\b");
  for (const auto& [path, text] : sources)
    if ((text.find(section_marker) != std::string::npos || text.find(struct_marker) != std::string::npos) &&
        std::regex_search(text, access))
      return true;
  return false;
}

}  // namespace

TEST(config_examples_test, every_shipped_config_loads_and_passes_the_device_check) {
  const auto files = shipped_configs();
  ASSERT_GE(files.size(), 2u);
  for (const auto& f : files) {
    auto c = fw::config::from_file(f.string());
    ASSERT_TRUE(c) << f << ": " << c.err().message;
    auto ok = fw::check_devices(*c);
#ifndef FW_HAVE_CUDA
    if (f.filename() == "gpu.toml") {  // a build without nvcc refuses the GPU example by name
      ASSERT_FALSE(ok) << f;
      EXPECT_NE(ok.err().message.find("no CUDA backend"), std::string::npos) << ok.err().message;
      continue;
    }
#endif
    EXPECT_TRUE(ok) << f << ": " << (ok ? "" : ok.err().message);
  }
}

TEST(config_examples_test, configs_that_ask_for_what_this_build_cannot_do_are_refused_by_name) {
  auto cuda = fw::config::from_string("[[devices]]\nkind = \"cuda\"\n", "gpu.toml");
  ASSERT_TRUE(cuda);
  auto r = fw::check_devices(*cuda);
#ifdef FW_HAVE_CUDA
  // A CUDA build runs one CUDA device alone; a GPU in a prefill/decode pair is refused by name.
  EXPECT_TRUE(r) << r.err().message;
  auto gpu_pair = fw::config::from_string(
      "[[devices]]\nkind = \"cuda\"\nrole = \"prefill\"\n[[devices]]\nkind = \"cpu\"\nrole = \"decode\"\n", "gpu.toml");
  ASSERT_TRUE(gpu_pair);
  r = fw::check_devices(*gpu_pair);
  ASSERT_FALSE(r);
  EXPECT_NE(r.err().message.find("devices[0]: a CUDA device runs as the only device"), std::string::npos) << r.err().message;
#else
  ASSERT_FALSE(r);
  EXPECT_NE(r.err().message.find("devices[0]: kind = \"cuda\" is not supported"), std::string::npos) << r.err().message;
#endif

  // A prefill + decode pair runs (physical separation); other role sets and offload are refused.
  auto pd = fw::config::from_string(
      "[[devices]]\nkind = \"cpu\"\nid = 0\nrole = \"prefill\"\n[[devices]]\nkind = \"cpu\"\nid = 1\nrole = \"decode\"\n",
      "pd.toml");
  ASSERT_TRUE(pd);
  EXPECT_TRUE(fw::check_devices(*pd));
  auto two_both = fw::config::from_string(
      "[[devices]]\nkind = \"cpu\"\nid = 0\nrole = \"both\"\n[[devices]]\nkind = \"cpu\"\nid = 1\nrole = \"decode\"\n",
      "pd.toml");
  ASSERT_TRUE(two_both);
  r = fw::check_devices(*two_both);
  ASSERT_FALSE(r);
  EXPECT_NE(r.err().message.find("2 devices with these roles cannot be run"), std::string::npos) << r.err().message;
  EXPECT_EQ(r.err().code, fw::errc::unsupported);
  // One offload device beside either form runs; two do not.
  auto offload = fw::config::from_string(
      "[[devices]]\nkind = \"cpu\"\nid = 0\nrole = \"both\"\n[[devices]]\nkind = \"cpu\"\nid = 1\nrole = \"offload\"\n",
      "off.toml");
  ASSERT_TRUE(offload);
  EXPECT_TRUE(fw::check_devices(*offload));
  auto two_offload = fw::config::from_string(
      "[[devices]]\nid = 0\nrole = \"both\"\n[[devices]]\nid = 1\nrole = \"offload\"\n[[devices]]\nid = 2\nrole = \"offload\"\n",
      "off.toml");
  ASSERT_TRUE(two_offload);
  r = fw::check_devices(*two_offload);
  ASSERT_FALSE(r);
  EXPECT_NE(r.err().message.find("3 devices with these roles cannot be run"), std::string::npos) << r.err().message;
}

TEST(config_examples_test, every_config_key_is_read_by_some_code) {
  const auto sources = consumer_sources();
  ASSERT_FALSE(sources.empty());
  for (const auto& qualified : fw::config::keys()) {
    const auto dot = qualified.find('.');
    const std::string section = qualified.substr(0, dot), key = qualified.substr(dot + 1);
    EXPECT_TRUE(consumed(sources, section, section + "_section", key))
        << qualified << " is parsed but no code outside runtime/config reads it";
  }
  for (const char* key : {"kind", "id", "threads", "cores", "kv_pool_mib", "role", "bandwidth_gbs"})
    EXPECT_TRUE(consumed(sources, "devices", "device_section", key)) << "devices." << key << " is read by nobody";
  for (const char* key : {"name", "path"})
    EXPECT_TRUE(consumed(sources, "plugins.load", "plugin_load", key)) << "plugins.load." << key << " is read by nobody";
}
