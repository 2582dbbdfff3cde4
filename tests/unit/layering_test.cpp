// The dependency rule of ../shared/ARCHITECTURE.md, checked on the sources: every
// #include "folder/file.hpp" of a file in kernels/, runtime/, actors/ and plugins/ must name a
// folder its own folder may use (directly or through a folder it may use). One CMake target per
// folder links the same edges; this test also catches header-only edges, which linking cannot.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

// Direct edges: folder -> folders it may include. Closed transitively below.
const std::map<std::string, std::vector<std::string>>& allowed_edges() {
  static const std::map<std::string, std::vector<std::string>> edges = {
      {"kernels/format", {}},
      {"kernels/ref", {"kernels/format"}},
      {"kernels/cpu", {"kernels/format", "kernels/ref"}},
      {"kernels/cuda", {"kernels/format"}},
      {"runtime/base", {}},
      {"runtime/config/sections", {}},
      // Policies: pure code over base only.
      {"runtime/spec", {"runtime/base"}},
      // The scheduler: pure too (no threads, no clock it is not given), over the pools' block
      // books it owns (kv), its requests' parameters (sample) and the supervision policies.
      {"runtime/sched", {"runtime/base", "runtime/kv", "runtime/sample", "runtime/supervise"}},
      {"runtime/supervise", {"runtime/base"}},
      {"runtime/metrics", {"runtime/base"}},
      {"runtime/net", {"runtime/base"}},
      {"runtime/config", {"runtime/base", "runtime/config/sections"}},
      {"runtime/gguf", {"runtime/base", "kernels/format"}},
      {"runtime/text", {"runtime/base", "runtime/gguf"}},
      {"runtime/sample", {"runtime/base", "runtime/config/sections"}},
      {"runtime/kv", {"runtime/base", "kernels/format", "kernels/cpu"}},
      {"runtime/model/arch", {}},
      {"runtime/model", {"runtime/base", "runtime/gguf", "runtime/text", "kernels/format", "runtime/model/arch"}},
      {"runtime/device", {"runtime/base", "runtime/kv", "runtime/model", "runtime/config/sections"}},
      {"runtime/device/cpu", {"runtime/device", "kernels/cpu", "runtime/model/arch"}},
      {"runtime/device/cuda", {"runtime/device", "kernels/cuda", "kernels/cpu", "runtime/model/arch"}},
      {"runtime/spec/drafts", {"runtime/spec", "runtime/device", "runtime/model", "runtime/sample", "runtime/gguf",
                               "kernels/cpu", "runtime/config/sections"}},
      {"runtime/step", {"runtime/device", "runtime/spec", "runtime/spec/drafts", "runtime/sample", "runtime/text",
                        "runtime/kv", "runtime/sched"}},
      {"runtime/plugin", {"runtime/base", "runtime/device", "runtime/spec/drafts", "runtime/config/sections", "runtime/supervise", "include/flywheel"}},
      {"runtime/plugin/kinds", {"runtime/plugin"}},
      {"runtime/quant", {"runtime/base", "runtime/model", "runtime/gguf", "runtime/device", "kernels/format", "kernels/cpu"}},
      {"runtime/setup", {"runtime/config", "runtime/device/cpu", "runtime/device/cuda", "runtime/step", "runtime/plugin/kinds",
                         "runtime/spec/drafts", "runtime/metrics", "runtime/supervise", "runtime/quant", "runtime/net"}},
      {"actors", {"actors/protocol", "runtime/setup", "runtime/metrics"}},
      {"actors/protocol", {"runtime/setup"}},
      {"plugins/q8_0_kernel", {"kernels/cpu", "include/flywheel", "plugins"}},
      {"plugins/draft_ngram", {"include/flywheel", "plugins"}},
      {"plugins/telemetry_nvml", {"include/flywheel", "plugins"}},
      {"plugins/fw_quant_kernel", {"kernels/cpu", "kernels/format", "include/flywheel", "plugins"}},
  };
  return edges;
}

std::set<std::string> closure(const std::string& folder) {
  std::set<std::string> out;
  std::vector<std::string> todo{folder};
  while (!todo.empty()) {
    const std::string f = todo.back();
    todo.pop_back();
    if (!out.insert(f).second) continue;
    auto it = allowed_edges().find(f);
    if (it != allowed_edges().end())
      for (const auto& d : it->second) todo.push_back(d);
  }
  return out;
}

std::string folder_of(const std::string& rel) {
  const auto slash = rel.find_last_of('/');
  return slash == std::string::npos ? std::string() : rel.substr(0, slash);
}

}  // namespace

TEST(layering_test, every_folder_of_the_engine_has_a_layer) {
  const fs::path root(FW_SOURCE_DIR);
  for (const char* top : {"kernels", "runtime", "actors"}) {
    for (const auto& e : fs::recursive_directory_iterator(root / top)) {
      if (!e.is_regular_file()) continue;
      const auto ext = e.path().extension();
      if (ext != ".hpp" && ext != ".cpp" && ext != ".cu") continue;
      const std::string folder = folder_of(fs::relative(e.path(), root).string());
      EXPECT_TRUE(allowed_edges().count(folder)) << folder << " (of " << e.path() << ") has no entry in the layer table";
    }
  }
}

TEST(layering_test, no_source_includes_a_folder_above_its_layer) {
  const fs::path root(FW_SOURCE_DIR);
  const std::regex include_re("^\\s*#\\s*include\\s+\"([a-z_0-9/]+)/[a-z_0-9.]+\"");
  int checked = 0;
  for (const char* top : {"kernels", "runtime", "actors", "plugins"}) {
    for (const auto& e : fs::recursive_directory_iterator(root / top)) {
      if (!e.is_regular_file()) continue;
      const auto ext = e.path().extension();
      if (ext != ".hpp" && ext != ".cpp" && ext != ".cu") continue;
      const std::string rel = fs::relative(e.path(), root).string();
      const std::string folder = folder_of(rel);
      if (!allowed_edges().count(folder)) continue;  // reported by the test above
      const auto ok = closure(folder);
      std::ifstream in(e.path());
      std::string line;
      int n = 0;
      while (std::getline(in, line)) {
        ++n;
        std::smatch m;
        if (!std::regex_search(line, m, include_re)) continue;
        const std::string target = m[1].str();
        ++checked;
        // actors/ may use every runtime folder's public headers (never tools/ or tests/).
        const bool actor_ok = folder.rfind("actors", 0) == 0 && target.rfind("runtime/", 0) == 0;
        EXPECT_TRUE(ok.count(target) || actor_ok) << rel << ":" << n << " includes " << target
                                                 << ", which the layer of " << folder << " may not use";
      }
    }
  }
  EXPECT_GT(checked, 100);  // the scan saw the sources
}
