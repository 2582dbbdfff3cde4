// plugin_host tests with real plugins built by the project: build/plugins/ (shipped: q8_0_kernel,
// draft_ngram) and build/tests/plugins/ (bad plugins, draft_ngram_v2, echo_c; see
// tests/plugins/CMakeLists.txt).
#include "runtime/plugin/plugin_host.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <latch>
#include <random>
#include <sstream>
#include <thread>
#include <vector>

#include "kernels/format/quant_ref.hpp"
#include "kernels/cpu/vec_dot.hpp"
#include "runtime/config/config.hpp"

namespace fw {
namespace {

namespace fs = std::filesystem;

const std::string plugin_dir = std::string(FW_BINARY_DIR) + "/plugins";
const std::string test_plugin_dir = std::string(FW_BINARY_DIR) + "/tests/plugins";
const std::string ngram_so = plugin_dir + "/libdraft_ngram.so";
const std::string q8_0_so = plugin_dir + "/libq8_0_kernel.so";
const std::string ngram_v2_so = test_plugin_dir + "/libdraft_ngram_v2.so";

std::string test_so(const std::string& name) { return test_plugin_dir + "/lib" + name + ".so"; }

std::string proc_maps() {
  std::ifstream in("/proc/self/maps");
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

bool mapped(const std::string& path) { return proc_maps().find(path) != std::string::npos; }

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

/// Each test gets its own copy directory (and scratch folder), removed afterwards.
class plugin_host_test : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    root_ = fs::temp_directory_path() /
            ("flywheel-plugin-test-" + std::to_string(::getpid()) + "-" + info->name());
    fs::remove_all(root_);
    fs::create_directories(root_ / "work");
    options_.copy_dir = (root_ / "copies").string();
  }
  void TearDown() override { fs::remove_all(root_); }

  fs::path root_;
  plugin_host_options options_;
};

/// The n-gram lookup the draft_ngram plugin implements, written out again as the reference.
std::vector<int32_t> ngram_reference(const std::vector<int32_t>& h, int n_max, int k) {
  const int64_t len = static_cast<int64_t>(h.size());
  for (int64_t n = std::min<int64_t>(n_max, len - 1); n >= 1; --n)
    for (int64_t start = len - n - 1; start >= 0; --start) {
      if (!std::equal(h.end() - n, h.end(), h.begin() + start)) continue;
      const int64_t take = std::min<int64_t>(k, len - (start + n));
      if (take > 0) return {h.begin() + start + n, h.begin() + start + n + take};
    }
  return {};
}

std::vector<int32_t> propose(draft_plugin& d, const std::vector<int32_t>& history, int k) {
  auto p = d.propose(1, history, k);
  EXPECT_TRUE(p.has_value()) << (p ? "" : p.err().what());
  return p ? p->tokens : std::vector<int32_t>{};
}

// -- loading, listing, unloading --

TEST_F(plugin_host_test, LoadsListsAndUnloadsTheShippedPlugins) {
  plugin_host host(options_);
  auto ngram = host.load("ngram", ngram_so);
  ASSERT_TRUE(ngram.has_value()) << ngram.err().what();
  auto q8 = host.load("q8_0", q8_0_so);
  ASSERT_TRUE(q8.has_value()) << q8.err().what();

  const auto rows = host.list();
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].name, "ngram");
  EXPECT_EQ(rows[0].kind, plugin_kind::draft_model);
  EXPECT_EQ(rows[0].plugin_name, "ngram");
  EXPECT_FALSE(rows[0].version.empty());
  EXPECT_EQ(rows[0].file, ngram_so);
  EXPECT_EQ(rows[0].state, plugin_state::loaded);
  EXPECT_EQ(rows[0].users, 0);
  EXPECT_EQ(rows[1].name, "q8_0");
  EXPECT_EQ(rows[1].kind, plugin_kind::quant_kernel);
  EXPECT_EQ(rows[1].types, std::vector<uint32_t>{8});

  // Loaded from a unique copy, never from the file itself.
  const std::string copy = rows[0].loaded_copy;
  EXPECT_TRUE(contains(copy, options_.copy_dir + "/libngram." + std::to_string(::getpid()) + "."));
  EXPECT_TRUE(mapped(copy));
  EXPECT_FALSE(mapped(ngram_so));

  EXPECT_EQ(rows[0].to_line(), "ngram draft_model " + rows[0].version + " " + ngram_so + " loaded 0");
  EXPECT_EQ(rows[0].to_json(), "{\"name\":\"ngram\",\"kind\":\"draft_model\",\"version\":\"" + rows[0].version +
                                   "\",\"file\":\"" + ngram_so + "\",\"state\":\"loaded\",\"users\":0}");

  auto again = host.load("ngram", ngram_so);
  ASSERT_FALSE(again.has_value());
  EXPECT_TRUE(contains(again.err().message, "already loaded"));

  ASSERT_TRUE(host.unload("ngram").has_value());
  EXPECT_FALSE(mapped(copy));
  EXPECT_FALSE(fs::exists(copy));
  ASSERT_EQ(host.list().size(), 1u);
  EXPECT_FALSE(host.create_draft("ngram").has_value());
  EXPECT_FALSE(host.unload("ngram").has_value());
  // The name is free again.
  ASSERT_TRUE(host.load("ngram", ngram_so).has_value());

  // The kernel plugin links the project's CPU kernels in statically; it must unload too (no
  // STB_GNU_UNIQUE symbols, no thread_local destructors pinning it).
  const std::string q8_copy = rows[1].loaded_copy;
  {
    auto kernel = host.create_quant_kernel("q8_0");
    ASSERT_TRUE(kernel.has_value());
    std::vector<float> x(32, 1.0f), y(1);
    std::vector<uint8_t> w(sizeof(block_q8_0));
    ASSERT_TRUE((*kernel)->quantize_row(8, x.data(), w.data(), 32).has_value());
    ASSERT_TRUE((*kernel)->gemv(8, w.data(), w.size(), 32, 1, x.data(), 1, y.data()).has_value());
    EXPECT_NEAR(y[0], 32.0f, 0.5f);
  }
  EXPECT_TRUE(mapped(q8_copy));
  ASSERT_TRUE(host.unload("q8_0").has_value());
  EXPECT_FALSE(mapped(q8_copy));
}

TEST_F(plugin_host_test, UnloadKeepsTheLibraryUntilTheLastObjectIsDestroyed) {
  plugin_host host(options_);
  ASSERT_TRUE(host.load("ngram", ngram_so).has_value());
  auto d = host.create_draft("ngram");
  ASSERT_TRUE(d.has_value()) << d.err().what();
  const std::string copy = host.find("ngram")->loaded_copy;
  EXPECT_EQ(host.find("ngram")->users, 1);

  ASSERT_TRUE(host.unload("ngram").has_value());
  auto rows = host.list();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].state, plugin_state::unloading);
  EXPECT_EQ(rows[0].users, 1);
  EXPECT_TRUE(mapped(copy));
  auto refused = host.create_draft("ngram");
  ASSERT_FALSE(refused.has_value());
  EXPECT_TRUE(contains(refused.err().message, "no plugin named 'ngram' is loaded"));

  // The object still works on the retired library.
  EXPECT_EQ(propose(**d, {1, 2, 3, 9, 1, 2, 3}, 2), (std::vector<int32_t>{9, 1}));
  d->reset();
  EXPECT_FALSE(mapped(copy));
  EXPECT_FALSE(fs::exists(copy));
  EXPECT_TRUE(host.list().empty());
}

TEST_F(plugin_host_test, ObjectsOutliveTheHost) {
  std::shared_ptr<draft_plugin> d;
  std::string copy;
  {
    plugin_host host(options_);
    ASSERT_TRUE(host.load("ngram", ngram_so).has_value());
    d = std::move(*host.create_draft("ngram"));
    copy = host.find("ngram")->loaded_copy;
  }
  EXPECT_TRUE(mapped(copy));
  EXPECT_EQ(propose(*d, {5, 6, 5}, 4), (std::vector<int32_t>{6, 5}));
  d.reset();
  EXPECT_FALSE(mapped(copy));
}

TEST_F(plugin_host_test, LoadsFromTheConfigAndKeepsGoingPastABadEntry) {
  auto cfg = config::from_string("[plugins]\ndir = \"" + plugin_dir + "\"\n" +
                                     "[[plugins.load]]\nname = \"draft_ngram\"\n"
                                     "[[plugins.load]]\nname = \"broken\"\npath = \"" + test_so("bad_abi") + "\"\n"
                                     "[[plugins.load]]\nname = \"q8_0_kernel\"\n",
                                 "plugins.toml");
  ASSERT_TRUE(cfg.has_value()) << cfg.err().what();
  plugin_host host(options_);
  const auto errors = host.load_all(cfg->plugins);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_TRUE(contains(errors[0].message, test_so("bad_abi")));
  const auto rows = host.list();
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].name, "broken");
  EXPECT_EQ(rows[0].state, plugin_state::failed);
  EXPECT_EQ(rows[0].kind, plugin_kind::unknown);
  EXPECT_TRUE(contains(rows[0].to_line(), "broken unknown - " + test_so("bad_abi") + " failed 0  (plugin 'broken'"));
  EXPECT_EQ(rows[1].name, "draft_ngram");
  EXPECT_EQ(rows[1].file, plugin_dir + "/libdraft_ngram.so");
  EXPECT_EQ(rows[1].state, plugin_state::loaded);
  EXPECT_EQ(rows[2].name, "q8_0_kernel");
  EXPECT_EQ(rows[2].state, plugin_state::loaded);
  EXPECT_TRUE(contains(to_json(rows), "\"error\":\"plugin 'broken'"));

  auto missing = host.load_configured(cfg->plugins, "nope");
  ASSERT_FALSE(missing.has_value());
  EXPECT_TRUE(contains(missing.err().message, "no [[plugins.load]] entry named 'nope'"));
  // A failed row clears with unload.
  ASSERT_TRUE(host.unload("broken").has_value());
  EXPECT_EQ(host.list().size(), 2u);
}

// -- bad plugins --

struct bad_case {
  std::string name;
  std::string file;
  std::string reason;  ///< a part of the message
};

TEST_F(plugin_host_test, BadPluginsAreRefusedWithAClearErrorAndTheHostKeepsServing) {
  const std::string missing = (root_ / "work" / "libmissing.so").string();
  const std::string text_dir = (root_ / "work").string();
  const std::vector<bad_case> cases = {
      {"abi", test_so("bad_abi"), "plugin ABI version 99, but this host speaks version 1"},
      {"no_entry", test_so("bad_no_entry"), "missing entry symbol fw_plugin_entry"},
      {"kind", test_so("bad_kind"), "unknown plugin kind 7"},
      {"probe", test_so("bad_probe"), "refused by its probe: needs a CPU with AVX-1024"},
      {"text", test_so("not_a_library"), "not a shared library (no ELF header)"},
      {"missing", missing, "no such file"},
      {"folder", text_dir, "not a regular file"},
      {"executable", "/bin/sh", "cannot be loaded: "},
  };
  plugin_host host(options_);
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto r = host.load(c.name, c.file);
    ASSERT_FALSE(r.has_value());
    EXPECT_TRUE(contains(r.err().message, "plugin '" + c.name + "' (" + c.file + "): ")) << r.err().message;
    EXPECT_TRUE(contains(r.err().message, c.reason)) << r.err().message;
    auto row = host.find(c.name);
    ASSERT_TRUE(row.has_value());
    EXPECT_EQ(row->state, plugin_state::failed);
    EXPECT_EQ(row->error, r.err().message);
    auto use = host.create_draft(c.name);
    ASSERT_FALSE(use.has_value());
    EXPECT_TRUE(contains(use.err().message, c.reason));

    auto checked = plugin_host::check(c.file, options_);
    ASSERT_FALSE(checked.has_value());
    EXPECT_TRUE(contains(checked.err().message, c.reason)) << checked.err().message;

    // Still serving: a good plugin loads and works after each refusal.
    ASSERT_TRUE(host.load("ngram_" + c.name, ngram_so).has_value());
    auto d = host.create_draft("ngram_" + c.name);
    ASSERT_TRUE(d.has_value());
    EXPECT_EQ(propose(**d, {1, 2, 3, 1, 2}, 1), (std::vector<int32_t>{3}));
  }
  // Nothing of the refused files stays mapped or copied.
  for (const auto& e : fs::directory_iterator(options_.copy_dir))
    EXPECT_TRUE(contains(e.path().filename().string(), "libngram_")) << e.path();
}

TEST_F(plugin_host_test, FailingCreateIsAnErrorNamingTheFile) {
  plugin_host host(options_);
  // create() that returns NULL with a reason, as the SDK asks.
  ASSERT_TRUE(host.load("fails", test_so("bad_create_fails")).has_value());
  auto d = host.create_draft("fails");
  ASSERT_FALSE(d.has_value());
  EXPECT_EQ(d.err().code, errc::worker_failed);
  EXPECT_EQ(d.err().message, "plugin 'fails' 0.0.1 (" + test_so("bad_create_fails") +
                                 "): create() failed: draft model file /nonexistent/draft.gguf not found");
  EXPECT_EQ(host.find("fails")->users, 0);
  auto checked = plugin_host::check(test_so("bad_create_fails"), options_);
  ASSERT_FALSE(checked.has_value());
  EXPECT_TRUE(contains(checked.err().message, "create() failed: draft model file"));

  // create() that lets an exception escape: forbidden by the SDK (undefined behaviour across
  // extern "C"); the host's try/catch contains it with GCC on Linux.
  ASSERT_TRUE(host.load("throws", test_so("bad_create_throws")).has_value());
  auto t = host.create_draft("throws");
  ASSERT_FALSE(t.has_value());
  EXPECT_TRUE(contains(t.err().message, test_so("bad_create_throws")));
  EXPECT_TRUE(contains(t.err().message, "create() threw (plugins must not throw): draft weights are corrupt"));
  EXPECT_EQ(host.find("throws")->users, 0);

  // A bad parameter is the same kind of error, from a real plugin.
  ASSERT_TRUE(host.load("ngram", ngram_so).has_value());
  auto bad_n = host.create_draft("ngram", {.params_json = "{\"n\": 0}"});
  ASSERT_FALSE(bad_n.has_value());
  EXPECT_TRUE(contains(bad_n.err().message, ngram_so));
  EXPECT_TRUE(contains(bad_n.err().message, "param n must be an integer from 1 to 16"));
  EXPECT_TRUE(host.create_draft("ngram").has_value());
}

TEST_F(plugin_host_test, AskingForTheWrongKindIsAnError) {
  plugin_host host(options_);
  ASSERT_TRUE(host.load("ngram", ngram_so).has_value());
  ASSERT_TRUE(host.load("q8", q8_0_so).has_value());
  auto k = host.create_quant_kernel("ngram");
  ASSERT_FALSE(k.has_value());
  EXPECT_TRUE(contains(k.err().message, "is a draft_model plugin, not a quant_kernel"));
  auto d = host.create_draft("q8");
  ASSERT_FALSE(d.has_value());
  EXPECT_TRUE(contains(d.err().message, "is a quant_kernel plugin, not a draft_model"));
  EXPECT_FALSE(host.load("../evil", ngram_so).has_value());
}

TEST_F(plugin_host_test, CheckAcceptsAGoodFile) {
  auto row = plugin_host::check(ngram_so, options_);
  ASSERT_TRUE(row.has_value()) << row.err().what();
  EXPECT_EQ(row->kind, plugin_kind::draft_model);
  EXPECT_EQ(row->state, plugin_state::loaded);
  EXPECT_FALSE(mapped(row->loaded_copy));
  EXPECT_FALSE(fs::exists(row->loaded_copy));
}

// -- draft_model: draft_ngram and a plugin written in C --

TEST_F(plugin_host_test, NgramDraftProposesTheContinuationOfTheLatestMatch) {
  plugin_host host(options_);
  ASSERT_TRUE(host.load("ngram", ngram_so).has_value());
  auto made = host.create_draft("ngram", {.params_json = "{}", .n_vocab = 64});
  ASSERT_TRUE(made.has_value());
  draft_plugin& d = **made;
  EXPECT_EQ(d.name(), "ngram");
  EXPECT_EQ(d.file(), ngram_so);
  ASSERT_TRUE(d.begin(1, std::vector<int32_t>{1, 2, 3}, sampling_params{}).has_value());

  // The last 3 tokens (1 2 3) occurred at the start: propose what followed.
  EXPECT_EQ(propose(d, {1, 2, 3, 4, 5, 9, 9, 1, 2, 3}, 4), (std::vector<int32_t>{4, 5, 9, 9}));
  // No earlier 3-gram (1 7 8): fall back to the 2-gram (7 8).
  EXPECT_EQ(propose(d, {7, 8, 5, 6, 1, 7, 8}, 4), (std::vector<int32_t>{5, 6, 1, 7}));
  // The most recent earlier occurrence wins.
  EXPECT_EQ(propose(d, {1, 2, 10, 1, 2, 11, 1, 2}, 2), (std::vector<int32_t>{11, 1}));
  // Never past the end of the history.
  EXPECT_EQ(propose(d, {5, 6, 5}, 4), (std::vector<int32_t>{6, 5}));
  // Nothing matches / nothing to match.
  EXPECT_TRUE(propose(d, {1, 2, 3, 4}, 4).empty());
  EXPECT_TRUE(propose(d, {7}, 4).empty());
  EXPECT_TRUE(propose(d, {}, 4).empty());
  EXPECT_TRUE(propose(d, {1, 2, 1}, 0).empty());
  // Deterministic: no probabilities even with n_vocab given (one-hot is implied).
  auto p = d.propose(1, std::vector<int32_t>{1, 2, 3, 1, 2}, 2);
  ASSERT_TRUE(p.has_value());
  EXPECT_TRUE(p->probs.empty());
  d.accept(1, std::vector<int32_t>{1, 2, 3, 1, 2, 3});
  d.end(1);

  // "n" caps the n-gram: with n = 1 only the last token is matched.
  auto one = host.create_draft("ngram", {.params_json = "{\"n\": 1}"});
  ASSERT_TRUE(one.has_value());
  EXPECT_EQ(propose(**one, {1, 2, 3, 4, 5, 9, 9, 1, 2, 3}, 2), (std::vector<int32_t>{4, 5}));
  EXPECT_EQ(propose(**one, {4, 1, 2, 3, 7, 8, 3}, 2), (std::vector<int32_t>{7, 8}));
  EXPECT_EQ(propose(d, {4, 1, 2, 3, 7, 8, 2, 3}, 2), (std::vector<int32_t>{7, 8}));

  // Random histories over a small alphabet agree with the reference lookup.
  std::mt19937 rng(7);
  for (int trial = 0; trial < 500; ++trial) {
    std::vector<int32_t> h(rng() % 40);
    for (auto& t : h) t = static_cast<int32_t>(rng() % 4);
    const int k = 1 + static_cast<int>(rng() % 6);
    ASSERT_EQ(propose(d, h, k), ngram_reference(h, 3, k)) << "trial " << trial;
  }
}

TEST_F(plugin_host_test, DraftPluginWrittenInCReturnsProbabilities) {
  plugin_host host(options_);
  auto row = host.load("echo", test_so("echo_c"));
  ASSERT_TRUE(row.has_value()) << row.err().what();
  EXPECT_EQ(row->version, "1.0.0-c");
  auto d = host.create_draft("echo", {.n_vocab = 8});
  ASSERT_TRUE(d.has_value());
  auto p = (*d)->propose(3, std::vector<int32_t>{4, 5}, 3);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->tokens, (std::vector<int32_t>{5, 5, 5}));
  ASSERT_EQ(p->probs.size(), 3u);
  EXPECT_EQ(p->probs[2], (std::vector<float>{0, 0, 0, 0, 0, 1, 0, 0}));
  // Without n_vocab the host asks for no probabilities.
  auto plain = host.create_draft("echo");
  EXPECT_TRUE((*plain)->propose(3, std::vector<int32_t>{4, 5}, 2)->probs.empty());
}

// -- quant_kernel: q8_0_kernel against the built-in kernels --

TEST_F(plugin_host_test, Q8_0KernelPluginMatchesTheBuiltInKernel) {
  plugin_host host(options_);
  ASSERT_TRUE(host.load("q8", q8_0_so).has_value());
  constexpr int64_t k = 256, n = 67, m = 5;
  const size_t row_bytes = (k / qk8_0) * sizeof(block_q8_0);
  std::mt19937 rng(42);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> wf(k * n), x(k * m);
  for (auto& v : wf) v = dist(rng);
  for (auto& v : x) v = dist(rng);
  std::vector<uint8_t> w(row_bytes * n);
  for (int64_t i = 0; i < n; ++i) quantize_row_ref(ggml_type::q8_0, wf.data() + i * k, w.data() + i * row_bytes, k);

  for (const char* simd : {"", "scalar", "avx2", "avx2vnni", "avx512"}) {
    SCOPED_TRACE(simd);
    const std::string params = *simd ? std::string("{\"simd\": \"") + simd + "\"}" : "{}";
    auto made = host.create_quant_kernel("q8", params);
    ASSERT_TRUE(made.has_value()) << made.err().what();
    quant_kernel& plugin = **made;
    EXPECT_TRUE(plugin.handles(8));
    EXPECT_FALSE(plugin.handles(2));

    auto level = cpu::best_simd_level();
    if (std::string(simd) == "scalar") level = cpu::simd_level::scalar;
    if (std::string(simd) == "avx2") level = std::min(level, cpu::simd_level::avx2);
    if (std::string(simd) == "avx2vnni") level = std::min(level, cpu::simd_level::avx2_vnni);
    const auto builtin = cpu::select_dot_kernel(ggml_type::q8_0, level);
    std::vector<cpu::block_q8x> xq(k / 32);
    std::vector<float> expect(n * m), got(n * m, -1.0f);
    for (int64_t j = 0; j < m; ++j) {
      builtin.quantize(x.data() + j * k, xq.data(), k);
      for (int64_t i = 0; i < n; ++i) expect[j * n + i] = builtin.dot(k, w.data() + i * row_bytes, xq.data());
    }
    ASSERT_TRUE(plugin.gemv(8, w.data(), row_bytes, k, n, x.data(), m, got.data()).has_value());
    EXPECT_EQ(got, expect);  // the same kernels: bit for bit
  }

  auto made = host.create_quant_kernel("q8");
  quant_kernel& plugin = **made;
  // quantize_row / dequantize_row are the reference conversions.
  std::vector<uint8_t> q(row_bytes), q_ref(row_bytes);
  ASSERT_TRUE(plugin.quantize_row(8, wf.data(), q.data(), k).has_value());
  quantize_row_ref(ggml_type::q8_0, wf.data(), q_ref.data(), k);
  EXPECT_EQ(q, q_ref);
  std::vector<float> back(k), back_ref(k);
  ASSERT_TRUE(plugin.dequantize_row(8, q.data(), back.data(), k).has_value());
  dequantize_row_ref(ggml_type::q8_0, q.data(), back_ref.data(), k);
  EXPECT_EQ(back, back_ref);

  // Errors are values: an unhandled type, a k that is not a block multiple.
  std::vector<float> y(n);
  auto unsupported = plugin.gemv(2, w.data(), row_bytes, k, n, x.data(), 1, y.data());
  ASSERT_FALSE(unsupported.has_value());
  EXPECT_EQ(unsupported.err().code, errc::unsupported);
  auto bad_k = plugin.gemv(8, w.data(), row_bytes, 33, n, x.data(), 1, y.data());
  ASSERT_FALSE(bad_k.has_value());
  EXPECT_EQ(bad_k.err().code, errc::invalid_argument);
  EXPECT_TRUE(contains(bad_k.err().message, "gemv() failed: invalid argument (-1)"));

  auto bad_simd = host.create_quant_kernel("q8", "{\"simd\": \"avx9000\"}");
  ASSERT_FALSE(bad_simd.has_value());
  EXPECT_TRUE(contains(bad_simd.err().message, "param simd must be"));
}

// -- hot reload --

/// A target sequence with repeats, so n-gram drafts are often right (and sometimes wrong).
std::vector<int32_t> target_tokens(int which, size_t len) {
  std::vector<int32_t> t;
  std::mt19937 rng(100 + which);
  const std::vector<int32_t> phrase = {1, 2, 3, 4, 5, 6, 7};
  while (t.size() < len) {
    if (rng() % 3 == 0) {
      t.push_back(static_cast<int32_t>(10 + rng() % 20));
    } else {
      const size_t from = rng() % phrase.size();
      for (size_t i = from; i < phrase.size() && t.size() < len; ++i) t.push_back(phrase[i] + which * 100);
    }
  }
  return t;
}

/// Greedy speculative decoding against a known target: accept the longest agreeing prefix of each
/// proposal plus the target's next token. Returns the generated sequence; counts accepted drafts.
std::vector<int32_t> speculate(draft_plugin& d, uint64_t seq, const std::vector<int32_t>& target, size_t to,
                               std::vector<int32_t> history, int64_t& accepted) {
  while (history.size() < to) {
    auto p = d.propose(seq, history, 4);
    if (!p) {
      ADD_FAILURE() << p.err().what();
      return history;
    }
    // The proposal must be the n-gram lookup of the history: the same code, whatever the version.
    if (p->tokens != ngram_reference(history, 3, 4)) ADD_FAILURE() << "wrong proposal at " << history.size();
    for (int32_t t : p->tokens) {
      if (history.size() >= to || t != target[history.size()]) break;
      history.push_back(t);
      ++accepted;
    }
    if (history.size() < to) history.push_back(target[history.size()]);
    d.accept(seq, history);
  }
  return history;
}

TEST_F(plugin_host_test, ReloadWhileEightSequencesAreGenerating) {
  // The configured file is a copy the test can replace, as a rebuild would.
  const std::string live = (root_ / "work" / "libngram_live.so").string();
  fs::copy_file(ngram_so, live);
  plugin_host host(options_);
  auto v1_row = host.load("ngram", live);
  ASSERT_TRUE(v1_row.has_value()) << v1_row.err().what();
  const std::string v1 = v1_row->version, v1_copy = v1_row->loaded_copy;
  const std::string v2 = "2.0.0-test";
  ASSERT_NE(v1, v2);

  constexpr int n_threads = 8;
  constexpr size_t prompt_len = 16, half = 300, total = 600;
  std::vector<std::shared_ptr<draft_plugin>> drafts;
  for (int i = 0; i < n_threads; ++i) {
    auto d = host.create_draft("ngram");
    ASSERT_TRUE(d.has_value());
    drafts.push_back(std::move(*d));
  }
  std::latch halfway(n_threads), reloaded(1);
  std::vector<std::vector<int32_t>> outputs(n_threads);
  std::vector<std::string> versions(n_threads);
  std::atomic<int64_t> accepted{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < n_threads; ++i)
    threads.emplace_back([&, i] {
      const auto target = target_tokens(i, total);
      draft_plugin& d = *drafts[i];
      const std::vector<int32_t> prompt(target.begin(), target.begin() + prompt_len);
      if (!d.begin(i, prompt, sampling_params{})) ADD_FAILURE() << "begin failed";
      int64_t acc = 0;
      auto h = speculate(d, i, target, half, prompt, acc);
      halfway.count_down();
      h = speculate(d, i, target, total - 50, h, acc);  // generating while the reload happens
      reloaded.wait();                                        // still in flight after it
      h = speculate(d, i, target, total, h, acc);
      versions[i] = d.version();
      d.end(i);
      outputs[i] = std::move(h);
      accepted += acc;
    });

  halfway.wait();
  // Rebuild: the new version replaces the configured file (copy aside + rename, never in place).
  fs::copy_file(ngram_v2_so, live + ".new");
  fs::rename(live + ".new", live);
  auto v2_row = host.reload("ngram");
  ASSERT_TRUE(v2_row.has_value()) << v2_row.err().what();
  EXPECT_EQ(v2_row->version, v2);
  EXPECT_NE(v2_row->loaded_copy, v1_copy);

  // The registry shows both: the new version serving, the old one draining its 8 users.
  auto rows = host.list();
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].version, v2);
  EXPECT_EQ(rows[0].state, plugin_state::loaded);
  EXPECT_EQ(rows[0].users, 0);
  EXPECT_EQ(rows[1].version, v1);
  EXPECT_EQ(rows[1].state, plugin_state::unloading);
  EXPECT_EQ(rows[1].users, n_threads);
  EXPECT_TRUE(mapped(v1_copy));
  EXPECT_TRUE(mapped(v2_row->loaded_copy));

  // The next request gets the new version.
  auto fresh = host.create_draft("ngram");
  ASSERT_TRUE(fresh.has_value());
  EXPECT_EQ((*fresh)->version(), v2);
  const auto t9 = target_tokens(9, 200);
  int64_t acc9 = 0;
  EXPECT_EQ(speculate(**fresh, 9, t9, 200, {t9.begin(), t9.begin() + 16}, acc9), t9);

  reloaded.count_down();
  for (auto& t : threads) t.join();
  for (int i = 0; i < n_threads; ++i) {
    EXPECT_EQ(outputs[i], target_tokens(i, total)) << "sequence " << i;
    EXPECT_EQ(versions[i], v1) << "sequence " << i;  // finished on the version it started with
  }
  EXPECT_GT(accepted.load(), int64_t{n_threads} * 100);  // the drafts did real work

  // Old objects gone: the old library is unloaded, its copy deleted; the new one stays.
  EXPECT_TRUE(mapped(v1_copy));
  drafts.clear();
  EXPECT_FALSE(mapped(v1_copy));
  EXPECT_FALSE(fs::exists(v1_copy));
  rows = host.list();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].version, v2);
  EXPECT_EQ(rows[0].users, 1);
  EXPECT_TRUE(mapped(rows[0].loaded_copy));
}

TEST_F(plugin_host_test, FailedReloadKeepsTheCurrentVersionServing) {
  const std::string live = (root_ / "work" / "libngram_live.so").string();
  fs::copy_file(ngram_so, live);
  plugin_host host(options_);
  ASSERT_TRUE(host.load("ngram", live).has_value());
  fs::copy_file(test_so("bad_abi"), live + ".new");
  fs::rename(live + ".new", live);
  auto r = host.reload("ngram");
  ASSERT_FALSE(r.has_value());
  EXPECT_TRUE(contains(r.err().message, "plugin ABI version 99"));
  EXPECT_TRUE(contains(r.err().message, "keeps serving"));
  auto row = host.find("ngram");
  ASSERT_TRUE(row.has_value());
  EXPECT_EQ(row->state, plugin_state::loaded);
  auto d = host.create_draft("ngram");
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(propose(**d, {1, 2, 1}, 1), (std::vector<int32_t>{2}));
}

TEST_F(plugin_host_test, StaleCopiesOfDeadProcessesAreRemoved) {
  fs::create_directories(options_.copy_dir);
  // pid 2^22 + 1 is above Linux's pid_max limit: no such process.
  const fs::path stale = fs::path(options_.copy_dir) / "libx.4194305.0.so";
  const fs::path mine = fs::path(options_.copy_dir) / ("libx." + std::to_string(::getpid()) + ".999.so");
  std::ofstream(stale) << "x";
  std::ofstream(mine) << "x";
  plugin_host host(options_);
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_TRUE(fs::exists(mine));
}

}  // namespace
}  // namespace fw
