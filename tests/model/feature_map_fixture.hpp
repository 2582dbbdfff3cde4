// A feature map for the model tests, fit once per build folder on calibration prompts (none of
// them a test prompt) and shared by the test processes.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/device/cpu/cpu_backend.hpp"
#include "runtime/model/model.hpp"
#include "runtime/spec/drafts/feature_drafter.hpp"
#include "runtime/spec/drafts/feature_fit.hpp"

namespace fw::test {

/// A feature map fit by fit_feature_map on the first 48 calibration prompts (48 tokens each;
/// none of them is a test prompt). Kept in the build folder for the other test processes (each
/// ctest case runs alone); written under a temporary name and renamed, so parallel cases never
/// read half a file. Empty on failure.
inline std::string fitted_feature_map(const std::shared_ptr<const model>& m) {
  const std::string path = std::string(FW_BINARY_DIR) + "/runtime_model_feature_map.gguf";
  if (load_feature_map(path)) return path;
  std::ifstream in(std::string(FW_SOURCE_DIR) + "/conf/calibration/prompts.txt");
  std::vector<std::vector<int32_t>> prompts;
  for (std::string line; std::getline(in, line) && prompts.size() < 48;)
    if (!line.empty() && line[0] != '#') prompts.push_back(m->vocab().encode(m->chat()->apply({{"user", line}}, true), true, true));
  cpu_backend_options bo;
  bo.threads = 2;
  bo.kv_tokens = 1024;
  auto be = std::make_unique<cpu_backend>(m->config(), m->weights(), bo);
  feature_fit_options o;
  o.max_tokens = 48;
  auto map = fit_feature_map(*m, *be, *be->thread_pool(), prompts, o);
  if (!map) {
    ADD_FAILURE() << map.err().what();
    return {};
  }
  EXPECT_GE(map->samples, 3u * m->config().n_embd);
  EXPECT_FALSE(map->vocab.empty());
  const std::string part = path + "." + std::to_string(::getpid());
  if (auto ok = save_feature_map(*map, part); !ok) {
    ADD_FAILURE() << ok.err().what();
    return {};
  }
  std::filesystem::rename(part, path);
  return path;
}

}  // namespace fw::test
