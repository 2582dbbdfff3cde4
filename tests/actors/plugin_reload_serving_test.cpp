// A plugin reload reaches the serving path: a kernel plugin serves the backend's next forward
// pass from the new version and the old library closes; a draft plugin starts new sequences on
// the new version while sequences in flight finish on the old one, which closes after them.
// The "rebuilt" plugin is the same source built with another version string, copied over the
// configured file the way a rebuild replaces it (copy + rename).
#include <gtest/gtest.h>

#include <filesystem>

#include "runtime/device/cpu/cpu_backend.hpp"
#include "runtime/plugin/kinds/live_draft.hpp"
#include "runtime/plugin/kinds/live_quant_kernel.hpp"
#include "runtime/plugin/plugin_host.hpp"
#include "tests/support/test_models.hpp"

namespace fw {
namespace {

namespace fs = std::filesystem;

/// Replaces `to` with `from` as a rebuild would: write a temporary file, then rename over it.
void replace_file(const std::string& from, const std::string& to) {
  fs::copy_file(from, to + ".tmp", fs::copy_options::overwrite_existing);
  fs::rename(to + ".tmp", to);
}

std::string version_of(const plugin_host& host, const std::string& name, plugin_state state) {
  for (const auto& r : host.list())
    if (r.name == name && r.state == state) return r.version;
  return "";
}

TEST(plugin_reload_serving_test, a_reloaded_kernel_plugin_serves_the_next_step_and_the_old_library_closes) {
  tiny_model_spec spec;
  spec.weight_type = ggml_type::q8_0;
  spec.seed = 33;
  auto m = test::load_tiny(spec, "reload_kernel_q8_0");
  ASSERT_TRUE(m);
  const std::string file = test::temp_dir() + "/libq8_reload.so";
  replace_file(std::string(FW_BINARY_DIR) + "/plugins/libq8_0_kernel.so", file);
  auto host = std::make_shared<plugin_host>();
  ASSERT_TRUE(host->load("q8", file));
  auto k = make_live_quant_kernel(host, "q8");
  ASSERT_TRUE(k) << k.err().what();
  cpu_backend_options o;
  o.threads = 2;
  o.kv_tokens = 128;
  o.pack_weights = false;
  o.kernel_plugins = {*k};
  cpu_backend be(m->config(), m->weights(), o);
  const std::string v1 = (*k)->version();

  auto run = [&] {
    const std::vector<int32_t> toks{5, 17, 42, 99, 7};
    kv_handle h = *be.kv_pool().allocate(0);
    forward_batch batch;
    batch.add_sequence(&h, toks.data(), toks.size(), 0, true);
    std::vector<float> logits;
    EXPECT_TRUE(be.forward(batch, logits));
    EXPECT_TRUE(be.kv_pool().release(h));
    return logits;
  };
  const auto before = run();

  replace_file(std::string(FW_BINARY_DIR) + "/tests/plugins/libq8_0_kernel_v2.so", file);
  ASSERT_TRUE(host->reload("q8"));
  EXPECT_EQ(version_of(*host, "q8", plugin_state::unloading), v1) << "the backend still holds v1";
  const auto after = run();  // this step switches to the new version
  EXPECT_EQ((*k)->version(), "2.0.0-test");
  bool reported = false;
  for (const auto& r : be.kernel_paths()) reported |= r.path == "plugin q8 2.0.0-test";
  EXPECT_TRUE(reported) << "the kernel report names the version serving";
  EXPECT_EQ(version_of(*host, "q8", plugin_state::unloading), "") << "v1 closed when the backend let go of it";
  EXPECT_EQ(host->find("q8")->users, 1);
  EXPECT_EQ(before, after) << "same kernel code, same logits";
}

TEST(plugin_reload_serving_test, a_reloaded_draft_plugin_drafts_new_sequences_while_old_ones_finish_on_the_old_version) {
  const std::string file = test::temp_dir() + "/libngram_reload.so";
  replace_file(std::string(FW_BINARY_DIR) + "/plugins/libdraft_ngram.so", file);
  auto host = std::make_shared<plugin_host>();
  ASSERT_TRUE(host->load("ngram", file));
  auto d = make_live_draft(host, "ngram", {});
  ASSERT_TRUE(d) << d.err().what();
  const std::vector<int32_t> prompt{1, 2, 3, 1, 2, 3, 1, 2};
  sampling_params greedy;
  greedy.temperature = 0;
  ASSERT_TRUE((*d)->begin(1, prompt, greedy));  // in flight across the reload

  replace_file(std::string(FW_BINARY_DIR) + "/tests/plugins/libdraft_ngram_v2.so", file);
  ASSERT_TRUE(host->reload("ngram"));
  ASSERT_TRUE((*d)->begin(2, prompt, greedy));  // starts on the new version
  EXPECT_EQ(version_of(*host, "ngram", plugin_state::loaded), "2.0.0-test");
  EXPECT_NE(version_of(*host, "ngram", plugin_state::unloading), "") << "sequence 1 keeps the old version";

  for (uint64_t seq : {1, 2}) {
    auto p = (*d)->propose(seq, prompt, 2);
    ASSERT_TRUE(p) << p.err().what();
    EXPECT_EQ(p->tokens, (std::vector<int32_t>{3, 1})) << "both versions draft the same";
  }
  (*d)->end(1);
  EXPECT_EQ(version_of(*host, "ngram", plugin_state::unloading), "") << "the old version closed after its last sequence";
  (*d)->end(2);
  EXPECT_EQ(host->find("ngram")->users, 1) << "the draft keeps a current object for new sequences";
}

}  // namespace
}  // namespace fw
