// `flywheel tokenize` on vocab-only GGUFs (no weights): the real binary's output against the ids
// llama.cpp produced for the same text and flags (tests/data/vocab_reference.json), plus its
// errors on a malformed file. Needs models/vocab/ (scripts/setup.sh).
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

namespace fw {
namespace {

struct run_result {
  int status;
  std::string out;
};

run_result run(const std::string& args) {
  const std::string cmd = std::string(FW_BINARY_DIR) + "/tools/flywheel tokenize " + args + " 2>&1";
  run_result r{-1, {}};
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf{};
  while (size_t n = fread(buf.data(), 1, buf.size(), p)) r.out.append(buf.data(), n);
  r.status = pclose(p);
  return r;
}

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += (c == '\'') ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string json_ids(const std::vector<int32_t>& ids) {
  std::string out = "[";
  for (size_t i = 0; i < ids.size(); ++i) out += (i ? ", " : "") + std::to_string(ids[i]);
  return out + "]\n";
}

TEST(tokenize_cli, vocab_only_files_match_llama_cpp_for_each_flag) {
  ASSERT_TRUE(std::filesystem::exists(std::string(FW_BINARY_DIR) + "/tools/flywheel"));
  std::ifstream in(std::string(FW_SOURCE_DIR) + "/tests/data/vocab_reference.json");
  ASSERT_TRUE(in);
  const nlohmann::json ref = nlohmann::json::parse(in);
  size_t checked = 0;
  for (const std::string name : {"llama-spm", "qwen2", "phi-3"}) {
    const std::string path = std::string(FW_SOURCE_DIR) + "/models/vocab/ggml-vocab-" + name + ".gguf";
    ASSERT_TRUE(std::filesystem::exists(path)) << path << " is missing: run scripts/setup.sh";
    size_t per_vocab = 0;
    for (const auto& c : ref["vocabs"][name]["encode"]) {
      if (!c.contains("text")) continue;  // raw bytes do not travel through a shell argument
      const std::string text = c["text"].get<std::string>();
      if (text.empty() || text.find('\0') != std::string::npos || text.front() == '-') continue;
      if (per_vocab++ % 9 != 0) continue;  // a spread of cases: each run starts a process
      std::string flags = " --model " + quote(path) + " --text " + quote(text);
      if (!c["add_special"].get<bool>()) flags += " --no-bos";
      if (!c["parse_special"].get<bool>()) flags += " --no-parse-special";
      const run_result r = run(flags);
      EXPECT_EQ(r.status, 0) << r.out;
      EXPECT_EQ(r.out, json_ids(c["ids"].get<std::vector<int32_t>>())) << name << ": " << text;
      ++checked;
    }
  }
  EXPECT_GE(checked, 30u);
}

TEST(tokenize_cli, malformed_file_is_a_clear_error) {
  const std::string bad = std::string(FW_BINARY_DIR) + "/tokenize_cli_bad.gguf";
  std::ofstream(bad) << "not a gguf file at all";
  const run_result r = run("--model " + quote(bad) + " --text hi");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("malformed file"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("not a GGUF file"), std::string::npos) << r.out;
  std::filesystem::remove(bad);
}

}  // namespace
}  // namespace fw
