// The fw_quant_kernel plugin (a quant_kernel v2 table): it serves W8A8 and W4A16 models through
// the backend's row split with logits identical to the built-in kernels, the kernel report names
// it, and its v1-style call (float activations, one thread) agrees too.
#include <gtest/gtest.h>

#include <filesystem>

#include "runtime/device/cpu/cpu_backend.hpp"
#include "runtime/gguf/gguf_writer.hpp"
#include "runtime/plugin/plugin_host.hpp"
#include "runtime/quant/quantizer.hpp"
#include "tests/support/test_models.hpp"

namespace fw {
namespace {

std::shared_ptr<const model> quantized_tiny(quant_scheme scheme, const std::string& name) {
  tiny_model_spec spec;
  spec.n_embd = 128, spec.n_ff = 256, spec.seed = 5;
  auto src = test::load_tiny(spec, name + "_src");
  if (!src) return nullptr;
  quantize_options o;
  o.scheme = scheme;
  o.activation_aware = false;  // round-to-nearest: no calibration needed for this test
  cpu::thread_pool pool(1);
  gguf_writer w;
  if (!quantize_model(*src, nullptr, nullptr, o, pool, w)) return nullptr;
  const auto path = (std::filesystem::temp_directory_path() / (name + "_" + std::to_string(::getpid()) + ".gguf")).string();
  if (!w.write(path)) return nullptr;
  auto m = model::load(path);
  std::filesystem::remove(path);  // the mapping keeps the data
  return m ? *m : nullptr;
}

class fw_quant_plugin : public ::testing::TestWithParam<quant_scheme> {};

TEST_P(fw_quant_plugin, serves_the_backend_with_identical_logits) {
  auto m = quantized_tiny(GetParam(), "fw_quant_plugin");
  ASSERT_TRUE(m);
  plugin_host host;
  ASSERT_TRUE(host.load("fwq", std::string(FW_BINARY_DIR) + "/plugins/libfw_quant_kernel.so"));
  auto k = host.create_quant_kernel("fwq");
  ASSERT_TRUE(k) << k.err().what();
  EXPECT_TRUE((*k)->row_split());
  const ggml_type t = m->weights().layers[0].wq.type;
  EXPECT_TRUE((*k)->handles(static_cast<uint32_t>(t))) << type_traits(t).name;

  cpu_backend_options plain;
  plain.threads = 2;
  plain.kv_tokens = 128;
  cpu_backend ref(m->config(), m->weights(), plain);
  cpu_backend_options with_plugin = plain;
  with_plugin.kernel_plugins = {*k};
  cpu_backend be(m->config(), m->weights(), with_plugin);
  bool reported = false;
  for (const auto& r : be.kernel_paths())
    reported |= r.weight_type == type_traits(t).name && r.path.find("plugin fwq ") == 0 &&
                r.path.find("v2") != std::string::npos;
  std::string paths;
  for (const auto& r : be.kernel_paths()) paths += r.weight_type + " -> " + r.path + "; ";
  EXPECT_TRUE(reported) << paths;

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

  // The v1-style call on the same plugin: float activations in, one thread.
  const auto& wq = m->weights().layers[0].wq;
  std::vector<float> x(static_cast<size_t>(2 * wq.k)), y1(static_cast<size_t>(2 * wq.n)), y2(y1.size());
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 37) % 11) - 5.f;
  ASSERT_TRUE((*k)->gemv(static_cast<uint32_t>(t), wq.data, wq.row_bytes, wq.k, wq.n, x.data(), 2, y1.data()));
  const auto kern = cpu::select_dot_kernel(t, cpu::best_simd_level());
  std::vector<uint8_t> act(cpu::act_row_bytes(kern.act, wq.k) * 2);
  for (int j = 0; j < 2; ++j) kern.quantize_row(x.data() + j * wq.k, act.data() + j * act.size() / 2, wq.k, 0.f);
  kern.gemm(wq.k, wq.data, wq.row_bytes, wq.n, act.data(), act.size() / 2, 2, y2.data(), wq.n);
  EXPECT_EQ(y1, y2);
  // Wrong arguments are refused, not crashed on.
  EXPECT_FALSE((*k)->gemm(static_cast<uint32_t>(ggml_type::q4_0), wq.data, wq.row_bytes, wq.k, wq.n, act.data(), 0, 1,
                          y1.data(), wq.n));
  EXPECT_FALSE((*k)->act_format(static_cast<uint32_t>(t), 33));
}

INSTANTIATE_TEST_SUITE_P(schemes, fw_quant_plugin, ::testing::Values(quant_scheme::w8a8, quant_scheme::w4a16),
                         [](const auto& info) { return std::string(scheme_name(info.param)); });

}  // namespace
}  // namespace fw
