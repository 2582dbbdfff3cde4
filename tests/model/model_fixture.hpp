// The real bundled model for `model`-labelled tests, loaded once per test binary. Tests skip
// with a reason when scripts/setup.sh has not fetched it.
#pragma once

#include <cstdlib>

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>

#include "runtime/model/model.hpp"

namespace fw::test {

/// The bundled model; FW_REAL_MODEL names another copy (a GPU host, where the tests run from a
/// packed folder: tools/gpu-check.sh).
inline std::string real_model_path() {
  if (const char* p = std::getenv("FW_REAL_MODEL"); p && *p) return p;
  return std::string(FW_SOURCE_DIR) + "/models/SmolLM2-135M-Instruct.Q4_1.gguf";
}

inline std::shared_ptr<const model> real_model() {
  static std::shared_ptr<const model> m = []() -> std::shared_ptr<const model> {
    if (!std::filesystem::exists(real_model_path())) return nullptr;
    auto r = model::load(real_model_path());
    if (!r) {
      ADD_FAILURE() << r.err().what();
      return nullptr;
    }
    return *r;
  }();
  return m;
}

#define FW_REQUIRE_REAL_MODEL()                                                           \
  auto model_ = ::fw::test::real_model();                                                 \
  if (!model_) GTEST_SKIP() << "real model not found at " << ::fw::test::real_model_path() \
                            << " (run scripts/setup.sh)"

}  // namespace fw::test
