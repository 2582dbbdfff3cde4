// Helpers for tests: tiny generated GGUF models written to a temporary folder and loaded.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>

#include "runtime/model/model.hpp"
#include "tools/tiny_model/tiny_model.hpp"

namespace fw::test {

inline std::string temp_dir() {
  static const std::string dir = [] {
    auto p = std::filesystem::temp_directory_path() / ("fw_tests_" + std::to_string(::getpid()));
    std::filesystem::create_directories(p);
    return p.string();
  }();
  return dir;
}

/// Writes the tiny model described by `spec` under a name derived from `tag` and loads it.
inline std::shared_ptr<const model> load_tiny(const tiny_model_spec& spec, const std::string& tag) {
  const std::string path = temp_dir() + "/" + tag + ".gguf";
  auto w = write_tiny_model(spec, path);
  EXPECT_TRUE(w.has_value()) << (w ? "" : w.err().what());
  auto m = model::load(path);
  EXPECT_TRUE(m.has_value()) << (m ? "" : m.err().what());
  return m ? *m : nullptr;
}

}  // namespace fw::test
