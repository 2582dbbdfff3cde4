// A quant_kernel plugin serving the CPU backend's matrix products: same logits as the built-in
// kernel, the plugin is counted as in use, and unloading it does not pull the code from under
// the backend.
#include <gtest/gtest.h>

#include "runtime/device/cpu/cpu_backend.hpp"
#include "runtime/plugin/plugin_host.hpp"
#include "tests/support/test_models.hpp"

namespace fw {
namespace {

TEST(kernel_plugin_backend, q8_0_plugin_serves_the_backend_with_identical_logits) {
  tiny_model_spec spec;
  spec.weight_type = ggml_type::q8_0;
  spec.seed = 31;
  auto m = test::load_tiny(spec, "kernel_plugin_q8_0");
  ASSERT_TRUE(m);
  plugin_host host;
  ASSERT_TRUE(host.load("q8", std::string(FW_BINARY_DIR) + "/plugins/libq8_0_kernel.so"));
  auto k = host.create_quant_kernel("q8");
  ASSERT_TRUE(k) << k.err().what();

  cpu_backend_options plain;
  plain.threads = 2;
  plain.kv_tokens = 128;
  plain.pack_weights = false;  // the built-in unpacked path, which the plugin reproduces bit for bit
  cpu_backend ref(m->config(), m->weights(), plain);
  cpu_backend_options with_plugin = plain;
  with_plugin.kernel_plugins = {*k};
  cpu_backend be(m->config(), m->weights(), with_plugin);
  k->reset();
  EXPECT_EQ(host.find("q8")->users, 1) << "the backend holds the plugin";
  bool reported = false;
  for (const auto& r : be.kernel_paths()) reported |= r.weight_type == "q8_0" && r.path.rfind("plugin q8", 0) == 0;
  EXPECT_TRUE(reported);
  ASSERT_TRUE(host.unload("q8"));  // the backend keeps the library alive

  const std::vector<int32_t> toks{5, 17, 42, 99, 7, 3, 250};
  std::vector<float> a, b;
  for (auto* backend : {&ref, &be}) {
    kv_handle h = *backend->kv_pool().allocate(0);
    forward_batch batch;
    batch.add_sequence(&h, toks.data(), toks.size(), 0, true);
    ASSERT_TRUE(backend->forward(batch, backend == &ref ? a : b));
    ASSERT_TRUE(backend->kv_pool().release(h));
  }
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(a, b);
}

}  // namespace
}  // namespace fw
