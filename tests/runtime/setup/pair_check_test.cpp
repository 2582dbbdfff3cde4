// The start-time consistency check of a prefill/decode pair: fabricated device descriptions for
// each kind of mismatch (pure), then through the composition root with two CPU devices: a pair
// that matches stays physical, a fabricated mismatch falls back to co-located with a message
// naming both sides.
#include <gtest/gtest.h>

#include "runtime/setup/device_identity_of.hpp"
#include "runtime/setup/runtime_parts.hpp"
#include "runtime/supervise/pair_check.hpp"
#include "tests/support/test_models.hpp"

namespace fw {
namespace {

device_identity gpu(const std::string& name) {
  device_identity d;
  d.name = name;
  d.kind = "cuda";
  d.cuda_runtime = "13.0";
  d.cuda_driver = "13.0";
  d.compute_capability = "9.0";
  d.model_fingerprint = "crc32c:0badf00d, 100 MB";
  d.kv_format_version = 1;
  d.kv_layers = 30;
  d.kv_heads = 3;
  d.kv_head_dim = 64;
  return d;
}

TEST(pair_check_test, identical_devices_pass) {
  const auto v = check_pair(gpu("prefill cuda:0"), gpu("decode cuda:1"));
  EXPECT_TRUE(v.ok);
  EXPECT_TRUE(v.mismatches.empty());
  EXPECT_TRUE(v.message.empty());
}

TEST(pair_check_test, each_mismatch_is_named_with_both_sides) {
  struct c {
    const char* what;
    void (*change)(device_identity&);
    const char* line;
  };
  const c cases[] = {
      {"runtime", [](device_identity& d) { d.cuda_runtime = "12.4"; },
       "CUDA runtime: prefill cuda:0 has 13.0, decode cuda:1 has 12.4"},
      {"driver", [](device_identity& d) { d.cuda_driver = "12.8"; },
       "CUDA driver: prefill cuda:0 has 13.0, decode cuda:1 has 12.8"},
      {"capability", [](device_identity& d) { d.compute_capability = "8.0"; },
       "compute capability: prefill cuda:0 has 9.0, decode cuda:1 has 8.0"},
      {"model", [](device_identity& d) { d.model_fingerprint = "crc32c:12345678, 100 MB"; },
       "model file: prefill cuda:0 has crc32c:0badf00d, 100 MB, decode cuda:1 has crc32c:12345678, 100 MB"},
      {"kv version", [](device_identity& d) { d.kv_format_version = 2; },
       "KV format version: prefill cuda:0 has 1, decode cuda:1 has 2"},
      {"kv shape", [](device_identity& d) { d.kv_heads = 8; },
       "KV shape: prefill cuda:0 has 30 layers x 3 KV heads x 64, decode cuda:1 has 30 layers x 8 KV heads x 64"},
      {"unknown runtime", [](device_identity& d) { d.cuda_runtime.clear(); },
       "CUDA runtime: prefill cuda:0 has 13.0, decode cuda:1 has unknown"},
  };
  for (const auto& k : cases) {
    device_identity b = gpu("decode cuda:1");
    k.change(b);
    const auto v = check_pair(gpu("prefill cuda:0"), b);
    EXPECT_FALSE(v.ok) << k.what;
    ASSERT_EQ(v.mismatches.size(), 1u) << k.what;
    EXPECT_EQ(v.mismatches[0], k.line);
    EXPECT_NE(v.message.find("physical prefill/decode separation refused"), std::string::npos);
    EXPECT_NE(v.message.find("(co-located)"), std::string::npos);
    EXPECT_NE(v.message.find(k.line), std::string::npos);
  }
}

TEST(pair_check_test, a_cpu_side_skips_the_cuda_checks_but_not_the_model_or_kv) {
  device_identity cpu = gpu("prefill cpu:0");
  cpu.kind = "cpu";
  cpu.cuda_runtime = cpu.cuda_driver = cpu.compute_capability = "";
  EXPECT_TRUE(check_pair(cpu, gpu("decode cuda:0")).ok) << "host-staged: no peer copy, no CUDA handshake";
  device_identity other = gpu("decode cuda:0");
  other.model_fingerprint = "crc32c:00000000, 1 MB";
  other.kv_format_version = 7;
  const auto v = check_pair(cpu, other);
  EXPECT_FALSE(v.ok);
  EXPECT_EQ(v.mismatches.size(), 2u);
}

TEST(pair_check_test, the_fingerprint_follows_the_weights) {
  tiny_model_spec a, b;
  a.seed = 41;
  b.seed = 42;
  auto ma = test::load_tiny(a, "pair_fp_a");
  auto ma2 = test::load_tiny(a, "pair_fp_a2");
  auto mb = test::load_tiny(b, "pair_fp_b");
  ASSERT_TRUE(ma && ma2 && mb);
  const std::string fa = model_fingerprint(ma->file());
  EXPECT_EQ(fa.rfind("crc32c:", 0), 0u) << fa;
  EXPECT_EQ(fa, model_fingerprint(ma2->file())) << "the same weights in another file";
  EXPECT_NE(fa, model_fingerprint(mb->file())) << "other weights";
}

class pair_setup_test : public ::testing::Test {
 protected:
  static expected<runtime_parts> build(std::function<void(device_identity&, device_identity&)> amend) {
    tiny_model_spec spec;
    spec.seed = 43;
    EXPECT_TRUE(test::load_tiny(spec, "pair_setup"));
    const std::string path = test::temp_dir() + "/pair_setup.gguf";
    auto cfg = config::from_string("[model]\npath = \"" + path +
                                       "\"\nctx_size = 128\n[kv_cache]\nblock_tokens = 16\npool_tokens = 1024\n"
                                       "[[devices]]\nid = 0\nthreads = 1\nrole = \"prefill\"\n"
                                       "[[devices]]\nid = 1\nthreads = 1\nrole = \"decode\"\n",
                                   "pair.toml");
    EXPECT_TRUE(cfg) << (cfg ? "" : cfg.err().message);
    build_options o;
    o.amend_identities = std::move(amend);
    return build_runtime(*cfg, o);
  }
};

TEST_F(pair_setup_test, a_matching_pair_stays_physical) {
  auto p = build({});
  ASSERT_TRUE(p) << p.err().what();
  EXPECT_TRUE(p->pair.ok);
  EXPECT_TRUE(p->devices.separate());
}

TEST_F(pair_setup_test, a_mismatched_pair_falls_back_to_co_located_with_a_message) {
  auto p = build([](device_identity& pre, device_identity& dec) {
    pre.kind = dec.kind = "cuda";
    pre.cuda_runtime = "12.4";
    dec.cuda_runtime = "13.0";
    pre.cuda_driver = dec.cuda_driver = "13.0";
    pre.compute_capability = dec.compute_capability = "9.0";
  });
  ASSERT_TRUE(p) << p.err().what();
  EXPECT_FALSE(p->pair.ok);
  EXPECT_FALSE(p->devices.separate()) << "co-located: the decode device prefills";
  ASSERT_FALSE(p->warnings.empty());
  EXPECT_NE(p->warnings.back().find("CUDA runtime: prefill cpu:0 has 12.4, decode cpu:1 has 13.0"), std::string::npos)
      << p->warnings.back();
}

}  // namespace
}  // namespace fw
