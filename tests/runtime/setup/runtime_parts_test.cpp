// The composition root builds what a config asks for: [compute] kernel_plugins from
// [[plugins.load]] serve the backend (and follow a reload while a request generates through the
// actor runtime), refusals come before any model work, and the engine limits come from
// [scheduler].
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <future>

#include "actors/engine.hpp"
#include "runtime/setup/runtime_parts.hpp"
#include "runtime/spec/drafts/feature_drafter.hpp"
#include "runtime/step/generator.hpp"
#include "tests/support/sampling_presets.hpp"
#include "tests/support/test_models.hpp"

namespace fw {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

void replace_file(const std::string& from, const std::string& to) {
  fs::copy_file(from, to + ".tmp", fs::copy_options::overwrite_existing);
  fs::rename(to + ".tmp", to);
}

/// A config over a tiny q8_0 model with the q8_0 kernel plugin (loaded from a copy we may replace).
config plugin_config(const std::string& model_path, const std::string& plugin_file) {
  auto c = config::from_string("[model]\npath = \"" + model_path +
                                   "\"\nctx_size = 256\n[compute]\nthreads = 2\nkernel_plugins = [\"q8\"]\n"
                                   "[kv_cache]\npool_tokens = 2048\n[scheduler]\nmax_batch = 4\nmax_queue = 9\n"
                                   "[[plugins.load]]\nname = \"q8\"\npath = \"" + plugin_file + "\"\n",
                               "plugin.toml");
  EXPECT_TRUE(c) << (c ? "" : c.err().message);
  return c ? *c : config{};
}

class runtime_parts_test : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    tiny_model_spec spec;
    spec.weight_type = ggml_type::q8_0;
    spec.seed = 51;
    ASSERT_TRUE(test::load_tiny(spec, "parts_q8_0"));
    model_path_ = test::temp_dir() + "/parts_q8_0.gguf";
  }
  static inline std::string model_path_;
};

TEST_F(runtime_parts_test, kernel_plugins_from_the_config_serve_the_backend) {
  const std::string plugin = test::temp_dir() + "/libparts_q8.so";
  replace_file(std::string(FW_BINARY_DIR) + "/plugins/libq8_0_kernel.so", plugin);
  auto parts = build_runtime(plugin_config(model_path_, plugin));
  ASSERT_TRUE(parts) << parts.err().what();
  bool served = false;
  for (const auto& k : parts->device()->kernel_paths()) served |= k.weight_type == "q8_0" && k.path.rfind("plugin q8 ", 0) == 0;
  EXPECT_TRUE(served) << "the kernel report names the plugin";
  EXPECT_EQ(parts->plugins->find("q8")->users, 1);
  const auto lim = parts->limits();
  EXPECT_EQ(lim.max_batch, 4u);
  EXPECT_EQ(lim.max_queue, 9u);
  EXPECT_EQ(lim.n_ctx, 256u);
  EXPECT_EQ(parts->kv_tokens, 2048u);
  generator g(*parts->m, *parts->device(), generator_options{256, 64, false});
  auto r = g.run(std::vector<int32_t>{3, 4, 5, 6}, test::greedy(8));
  ASSERT_TRUE(r) << r.err().what();
  EXPECT_EQ(r->tokens.size(), 8u);
}

TEST_F(runtime_parts_test, a_feature_draft_without_its_map_fits_it_on_first_use_and_reuses_it) {
  const std::string dir = test::temp_dir() + "/first_use_fit_" + std::to_string(::getpid());
  fs::create_directories(dir);
  const std::string map = dir + "/feature.gguf", prompts = dir + "/prompts.txt";
  std::ofstream(prompts) << "What is the capital of France?\nName three colours.\nCount to five.\n";
  auto cfg = config::from_string("[model]\npath = \"" + model_path_ +
                                     "\"\nctx_size = 256\n[compute]\nthreads = 2\n[kv_cache]\npool_tokens = 2048\n"
                                     "[speculative]\ndraft = \"feature\"\nfeature_map = \"" + map +
                                     "\"\nfeature_prompts = \"" + prompts + "\"\n",
                                 "feature.toml");
  ASSERT_TRUE(cfg) << cfg.err().message;
  ASSERT_FALSE(fs::exists(map));
  auto parts = build_runtime(*cfg);
  ASSERT_TRUE(parts) << parts.err().what();
  EXPECT_TRUE(parts->draft) << "the draft was built from the map fitted just now";
  ASSERT_TRUE(fs::exists(map));
  auto loaded = load_feature_map(map);
  ASSERT_TRUE(loaded) << loaded.err().what();
  EXPECT_GT(loaded->samples, 0u);
  // The second start reads the file instead of fitting again.
  const auto written = fs::last_write_time(map);
  auto again = build_runtime(*cfg);
  ASSERT_TRUE(again) << again.err().what();
  EXPECT_EQ(fs::last_write_time(map), written);
  // A prompt file that is not there is a clear error, not a silent plain decoder.
  cfg->speculative.feature_map = dir + "/other.gguf";
  cfg->speculative.feature_prompts = dir + "/missing.txt";
  auto bad = build_runtime(*cfg);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.err().message.find("missing.txt"), std::string::npos) << bad.err().message;
  fs::remove_all(dir);
}

TEST_F(runtime_parts_test, refusals_and_bad_plugins_fail_before_serving) {
  auto cuda = config::from_string("[[devices]]\nkind = \"cuda\"\n", "cuda.toml");
  ASSERT_TRUE(cuda);
  cuda->model.path = model_path_;
  auto r = build_runtime(*cuda);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.err().code, errc::unsupported);
  auto missing = build_runtime(plugin_config(model_path_, test::temp_dir() + "/no_such_plugin.so"));
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.err().message.find("compute.kernel_plugins"), std::string::npos) << missing.err().message;
}

TEST_F(runtime_parts_test, a_kernel_plugin_reloaded_while_a_request_generates_serves_the_next_steps) {
  const std::string plugin = test::temp_dir() + "/libparts_q8_live.so";
  replace_file(std::string(FW_BINARY_DIR) + "/plugins/libq8_0_kernel.so", plugin);
  auto parts = build_runtime(plugin_config(model_path_, plugin));
  ASSERT_TRUE(parts) << parts.err().what();
  // The same request without a reload, for reference (the plugin's products are deterministic).
  generator g(*parts->m, *parts->device(), generator_options{256, 64, false});
  const std::vector<int32_t> prompt{3, 4, 5, 6, 7};
  auto want = g.run(prompt, test::greedy(60));
  ASSERT_TRUE(want);
  auto host = parts->plugins;
  // Between the decode worker's 5th and 6th step the plugin file is rebuilt and reloaded, on the
  // worker's thread, so the reload lands mid-generation whatever the timing.
  auto reloaded = std::make_shared<std::atomic<bool>>(false);
  auto steps = std::make_shared<std::atomic<int>>(0);
  auto faults = std::make_shared<actors::engine_faults>();
  faults->before_decode_step = [=] {
    if (steps->fetch_add(1) == 5) {
      replace_file(std::string(FW_BINARY_DIR) + "/tests/plugins/libq8_0_kernel_v2.so", plugin);
      reloaded->store(host->reload("q8").has_value());
    }
    return false;
  };
  auto e = actors::engine::start(*parts, parts->limits(), actors::engine_options{faults});
  ASSERT_TRUE(e) << e.err().what();
  std::promise<actors::completed_request> done;
  actors::completed_request got;
  (*e)->submit(prompt, test::greedy(60), [&](const actors::stream_event& ev) {
    if (ev.kind == static_cast<uint8_t>(actors::stream_kind::token)) {
      got.tokens.insert(got.tokens.end(), ev.tokens.begin(), ev.tokens.end());
    } else {
      got.final = ev;
      done.set_value(got);
    }
  });
  auto f = done.get_future();
  ASSERT_EQ(f.wait_for(60s), std::future_status::ready);
  auto r = f.get();
  ASSERT_TRUE(reloaded->load());
  ASSERT_TRUE(r.ok()) << r.final.error;
  EXPECT_EQ(r.tokens, want->tokens) << "the request finished across the reload, unchanged";
  bool v2 = false;
  for (const auto& k : (*e)->device().kernel_paths()) v2 |= k.path == "plugin q8 2.0.0-test";
  EXPECT_TRUE(v2) << "the rebuilt plugin serves now";
  for (const auto& row : host->list()) EXPECT_NE(row.state, plugin_state::unloading) << "the old version closed";
  (*e)->shutdown();
}

}  // namespace
}  // namespace fw

namespace fw {
namespace {

// [[devices]] prefill + decode: the composition root builds two backends, each with its own
// threads, cores and KV pool (kv_pool_mib per device), the limits carry the deadline and the
// transfer format, and an engine started on them moves each prompt's KV between the pools.
TEST_F(runtime_parts_test, a_prefill_decode_pair_gets_its_own_threads_and_pools) {
  auto c = config::from_string("[model]\npath = \"" + model_path_ +
                                   "\"\nctx_size = 256\n[kv_cache]\ntype = \"f32\"\ntransfer = \"int8\"\n"
                                   "[scheduler]\nprefill_deadline_s = 1.5\n"
                                   "[[devices]]\nid = 0\nrole = \"prefill\"\nkv_pool_mib = 1\ncores = [0]\n"
                                   "[[devices]]\nid = 1\nrole = \"decode\"\nthreads = 1\nkv_pool_mib = 2\n",
                               "pd.toml");
  ASSERT_TRUE(c) << c.err().message;
  auto parts = build_runtime(*c);
  ASSERT_TRUE(parts) << parts.err().what();
  ASSERT_TRUE(parts->devices.separate());
  auto* pre = dynamic_cast<cpu_backend*>(parts->devices.prefiller());
  auto* dec = dynamic_cast<cpu_backend*>(parts->device());
  ASSERT_TRUE(pre && dec);
  EXPECT_EQ(pre->threads(), 1);  // threads = 0 with cores: one per core
  EXPECT_EQ(dec->threads(), 1);
  EXPECT_NE(pre->thread_pool(), dec->thread_pool());
  EXPECT_NE(pre->summary().find("on core 0"), std::string::npos) << pre->summary();
  const auto& layout = pre->kv_pool().layout();
  EXPECT_EQ(pre->kv_pool().total_blocks(), kv_block_pool::blocks_for_bytes(layout, size_t{1} << 20));
  EXPECT_EQ(dec->kv_pool().total_blocks(), kv_block_pool::blocks_for_bytes(layout, size_t{2} << 20));
  const auto lim = parts->limits();
  EXPECT_EQ(lim.prefill_deadline_s, 1.5);
  EXPECT_EQ(lim.kv_transfer, kv_wire::int8);
  EXPECT_EQ(lim.prefix_cache_blocks, static_cast<uint32_t>(0.25 * pre->kv_pool().total_blocks()));
  auto e = actors::engine::start(*parts, lim);
  ASSERT_TRUE(e) << e.err().what();
  auto r = (*e)->run({5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22}, test::greedy(6));
  EXPECT_TRUE(r.ok()) << r.final.error;
  EXPECT_EQ(r.tokens.size(), 6u);
  auto st = (*e)->stats();
  ASSERT_TRUE(st);
  EXPECT_EQ(st->kv_transfers, 1u);
  EXPECT_LT(st->kv_transfer_bytes, st->kv_transfer_f32_bytes / 3);  // int8 on the wire
}

}  // namespace
}  // namespace fw

namespace fw {
namespace {

TEST_F(runtime_parts_test, a_decode_node_reads_the_nodes_secret_and_refuses_a_missing_or_short_one) {
  const std::string dir = test::temp_dir() + "/node_secret_" + std::to_string(::getpid());
  fs::create_directories(dir);
  auto cfg_with = [&](const std::string& secret_file) {
    auto c = config::from_string("[model]\npath = \"" + model_path_ +
                                     "\"\nctx_size = 256\n[kv_cache]\npool_tokens = 1024\n[node]\nrole = \"decode\"\n"
                                     "peers = [\"127.0.0.1:7\"]\nsecret_file = \"" + secret_file + "\"\n",
                                 "node.toml");
    EXPECT_TRUE(c) << (c ? "" : c.err().message);
    return *c;
  };
  std::ofstream(dir + "/good") << "0123456789abcdef-a-good-secret\n";
  auto parts = build_runtime(cfg_with(dir + "/good"));
  ASSERT_TRUE(parts) << parts.err().what();
  EXPECT_EQ(parts->node_secret, "0123456789abcdef-a-good-secret");
  EXPECT_EQ(parts->limits().nodes.secret, parts->node_secret);

  auto missing = build_runtime(cfg_with(dir + "/missing"));
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.err().message.find(dir + "/missing"), std::string::npos) << missing.err().message;
  std::ofstream(dir + "/short") << "secret\n";
  auto shrt = build_runtime(cfg_with(dir + "/short"));
  ASSERT_FALSE(shrt);
  EXPECT_NE(shrt.err().message.find("at least 16"), std::string::npos) << shrt.err().message;

  // No file and no FLYWHEEL_NODE_SECRET: it serves, unauthenticated, and says so.
  ::unsetenv("FLYWHEEL_NODE_SECRET");
  auto open = build_runtime(cfg_with(""));
  ASSERT_TRUE(open) << open.err().what();
  EXPECT_TRUE(open->node_secret.empty());
  bool warned = false;
  for (const auto& w : open->warnings) warned |= w.find("unauthenticated") != std::string::npos;
  EXPECT_TRUE(warned);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace fw
