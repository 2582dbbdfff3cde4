// Each CUDA kernel against the CPU reference on the same inputs, with a named tolerance (float
// sums in another order, fused multiply-adds). Skipped with the reason printed where no CUDA
// device exists; tools/gpu-check.sh runs them on a GPU host.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "cuda_test_support.hpp"
#include "kernels/cpu/attention.hpp"
#include "kernels/cpu/ops.hpp"
#include "kernels/cuda/cuda_kernels.hpp"
#include "kernels/format/ggml_type.hpp"
#include "kernels/format/fw_formats.hpp"
#include "kernels/ref/fw_dot_ref.hpp"
#include "kernels/ref/vec_dot_ref.hpp"
#include "runtime/kv/kv_block_pool.hpp"

namespace {

using fw::test::device_array;
using fw::cuda::wfmt;

// Named tolerances: relative to the sum of |terms| of each output.
constexpr double matmul_tolerance = 2e-6;     // f32 accumulation over k = 512
// The integer path against the CPU reference's integer products: the same per-block (per-group)
// terms, the float sums in another order.
constexpr double integer_matmul_tolerance = 2e-6;
constexpr double elementwise_tolerance = 1e-6;
constexpr double attention_tolerance = 1e-5;  // softmax-weighted sums over up to 1,000 keys
constexpr double entropy_tolerance = 1e-4;

std::vector<float> normal(size_t n, uint32_t seed, float sd = 1.f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.f, sd);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

TEST(cuda_kernels_test, matmul_of_every_weight_format_matches_the_dequantized_product) {
  FW_REQUIRE_GPU();
  const std::pair<fw::ggml_type, wfmt> formats[] = {
      {fw::ggml_type::f32, wfmt::f32},   {fw::ggml_type::f16, wfmt::f16},     {fw::ggml_type::bf16, wfmt::bf16},
      {fw::ggml_type::q4_0, wfmt::q4_0}, {fw::ggml_type::q4_1, wfmt::q4_1},   {fw::ggml_type::q8_0, wfmt::q8_0},
      {fw::ggml_type::fw_w8a8, wfmt::w8}, {fw::ggml_type::fw_w4a16_g32, wfmt::w4g32},
      {fw::ggml_type::fw_w4a16_g128, wfmt::w4g128}};
  constexpr int64_t n = 100, k = 512;  // n not a multiple of the 8 columns per block
  for (const auto& [type, f] : formats) {
    SCOPED_TRACE(std::string(fw::type_traits(type).name));
    const auto t = fw::type_traits(type);
    const size_t rb = fw::row_bytes(t, k);
    const auto src = normal(n * k, 1, 0.05f);
    std::vector<uint8_t> w(rb * n);
    std::vector<float> deq(n * k);
    for (int64_t r = 0; r < n; ++r) {
      t.from_float(src.data() + r * k, w.data() + r * rb, k);
      t.to_float(w.data() + r * rb, deq.data() + r * k, k);
    }
    device_array<uint8_t> dw(w);
    const bool integer = fw::cuda::integer_act_format(f);
    for (int64_t m : {1, 2, 3, 8, 13, 40, 77}) {  // 13, 40, 77: the tensor-core path of the integer products
      const int64_t ldy = n + 4;
      const auto x = normal(m * k, 2 + static_cast<uint32_t>(m));
      device_array<float> dx(x), dy(static_cast<size_t>(m * ldy));
      fw::cuda::weight_desc d{f, dw.p, static_cast<int64_t>(rb), n, k};
      ASSERT_TRUE(fw::cuda::matmul(d, dx.p, k, m, dy.p, ldy, nullptr));
      const auto y = dy.get();
      for (int64_t r = 0; r < m; ++r)
        for (int64_t c = 0; c < n; ++c) {
          double want = 0, mag = 0;
          for (int64_t i = 0; i < k; ++i) want += double(deq[c * k + i]) * x[r * k + i], mag += std::abs(double(deq[c * k + i]) * x[r * k + i]);
          ASSERT_NEAR(y[r * ldy + c], want, matmul_tolerance * mag + 1e-7) << "m " << m << " row " << r << " col " << c;
        }
      if (!integer) continue;
      // The integer path: x quantized in the scratch (int8 blocks, or int16 rows for W4A16), then
      // dp4a / dp2a; equal to the CPU reference's integer dot products up to the order of the
      // float sums.
      device_array<uint8_t> scratch(static_cast<size_t>(fw::cuda::act_scratch_bytes(f, m, k)) + 16);
      ASSERT_FALSE(fw::cuda::matmul(d, dx.p, k, m, dy.p, ldy, nullptr, scratch.p + 1)) << "a misaligned scratch";
      ASSERT_TRUE(fw::cuda::matmul(d, dx.p, k, m, dy.p, ldy, nullptr, scratch.p));
      const auto yi = dy.get();
      std::vector<fw::cpu::block_q8x> xq(k / 32);
      std::vector<uint8_t> x16(fw::act_i16_row_bytes(k)), x8(fw::act_i8_row_bytes(k));
      for (int64_t r = 0; r < m; ++r) {
        fw::cpu::ref::quantize_q8x(x.data() + r * k, xq.data(), k);
        fw::cpu::ref::quantize_act_i16(x.data() + r * k, x16.data(), k, 0.f);
        fw::cpu::ref::quantize_act_i8(x.data() + r * k, x8.data(), k, 0.f);
        for (int64_t c = 0; c < n; ++c) {
          const void* row = w.data() + c * rb;
          const float want = f == wfmt::q4_0     ? fw::cpu::ref::dot_q4_0(k, row, xq.data())
                             : f == wfmt::q4_1   ? fw::cpu::ref::dot_q4_1(k, row, xq.data())
                             : f == wfmt::q8_0   ? fw::cpu::ref::dot_q8_0(k, row, xq.data())
                             : f == wfmt::w8     ? fw::cpu::ref::dot_w8a8(k, row, x8.data())
                             : f == wfmt::w4g32  ? fw::cpu::ref::dot_w4a16<32>(k, row, x16.data())
                             : f == wfmt::w4g64  ? fw::cpu::ref::dot_w4a16<64>(k, row, x16.data())
                                                 : fw::cpu::ref::dot_w4a16<128>(k, row, x16.data());
          double mag = 0;
          for (int64_t i = 0; i < k; ++i) mag += std::abs(double(deq[c * k + i]) * x[r * k + i]);
          ASSERT_NEAR(yi[r * ldy + c], want, integer_matmul_tolerance * mag + 1e-7)
              << "int8 activations, m " << m << " row " << r << " col " << c;
        }
      }
      if (f != wfmt::w8) continue;
      // W8A8 with a static activation scale from calibration (values beyond it saturate).
      d.act_scale = 0.02f;
      ASSERT_TRUE(fw::cuda::matmul(d, dx.p, k, m, dy.p, ldy, nullptr, scratch.p));
      const auto ys = dy.get();
      for (int64_t r = 0; r < m; ++r) {
        fw::cpu::ref::quantize_act_i8(x.data() + r * k, x8.data(), k, d.act_scale);
        for (int64_t c = 0; c < n; ++c) {
          const float want = fw::cpu::ref::dot_w8a8(k, w.data() + c * rb, x8.data());
          double mag = 0;  // the saturated activations are smaller than x
          for (int64_t i = 0; i < k; ++i) mag += std::abs(double(deq[c * k + i]) * x[r * k + i]);
          ASSERT_NEAR(ys[r * ldy + c], want, integer_matmul_tolerance * mag + 1e-7)
              << "static scale, m " << m << " row " << r << " col " << c;
        }
      }
    }
  }
}

TEST(cuda_kernels_test, norms_activations_and_gathers_match_the_cpu_ops) {
  FW_REQUIRE_GPU();
  constexpr int64_t rows = 5, width = 576, ld = 600;
  auto x = normal(rows * ld, 3);
  const auto w = normal(width, 4);
  device_array<float> dx(x), dw(w), dy(rows * ld);
  fw::cuda::rms_norm(dx.p, ld, dw.p, dy.p, ld, width, rows, 1, 1e-5f, nullptr);
  auto y = dy.get();
  std::vector<float> want(width);
  for (int64_t r = 0; r < rows; ++r) {
    fw::cpu::ref::rms_norm(x.data() + r * ld, w.data(), want.data(), width, 1e-5f);
    for (int64_t i = 0; i < width; ++i) ASSERT_NEAR(y[r * ld + i], want[i], elementwise_tolerance * (1 + std::abs(want[i])));
  }
  // Per-head norms (segments of 64), in place.
  fw::cuda::rms_norm(dx.p, ld, dw.p, dx.p, ld, 64, rows, 9, 1e-6f, nullptr);
  auto xs = dx.get();
  for (int64_t r = 0; r < rows; ++r)
    for (int h = 0; h < 9; ++h) {
      fw::cpu::ref::rms_norm(x.data() + r * ld + h * 64, w.data(), want.data(), 64, 1e-6f);
      for (int i = 0; i < 64; ++i) ASSERT_NEAR(xs[r * ld + h * 64 + i], want[i], elementwise_tolerance * (1 + std::abs(want[i])));
    }
  // silu(gate) * up over rows of [gate | up].
  constexpr int64_t ff = 96;
  auto gu = normal(rows * 2 * ff, 5);
  device_array<float> dgu(gu);
  fw::cuda::silu_mul(dgu.p, 2 * ff, ff, rows, nullptr);
  auto got = dgu.get();
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<float> g(gu.begin() + r * 2 * ff, gu.begin() + r * 2 * ff + ff);
    fw::cpu::ref::silu_mul(g.data(), gu.data() + r * 2 * ff + ff, ff);
    for (int64_t i = 0; i < ff; ++i) ASSERT_NEAR(got[r * 2 * ff + i], g[i], elementwise_tolerance * (1 + std::abs(g[i])));
  }
  // Gather rows 4 and 1, then a bias and a residual add.
  device_array<int32_t> idx(std::vector<int32_t>{4, 1});
  device_array<float> out(2 * width), bias(w);
  fw::cuda::gather_rows(dy.p, ld, idx.p, 2, width, out.p, nullptr);
  fw::cuda::add_bias(out.p, width, bias.p, width, 2, nullptr);
  fw::cuda::add(out.p, out.p, 2 * width, nullptr);  // doubles every value
  auto o = out.get();
  for (int j = 0; j < 2; ++j)
    for (int64_t i = 0; i < width; ++i) ASSERT_FLOAT_EQ(o[j * width + i], 2 * (y[(j == 0 ? 4 : 1) * ld + i] + w[i]));
}

TEST(cuda_kernels_test, rope_turns_q_and_k_by_the_cpu_table) {
  FW_REQUIRE_GPU();
  constexpr int heads = 4, kv_heads = 2, hd = 64, n_rot = 64, rows = 3;
  constexpr int64_t ld = (heads + 2 * kv_heads) * hd;
  for (bool neox : {false, true}) {
    auto qkv = normal(rows * ld, 6);
    std::vector<float> cs(rows * n_rot);
    const int pos[rows] = {0, 7, 3000};
    for (int r = 0; r < rows; ++r) fw::cpu::rope_cos_sin(n_rot, pos[r], 10000.f, 1.f, cs.data() + r * n_rot);
    device_array<float> d(qkv), dcs(cs);
    fw::cuda::rope(d.p, ld, rows, heads, kv_heads, hd, n_rot, dcs.p, neox, nullptr);
    auto got = d.get();
    for (int r = 0; r < rows; ++r) {
      fw::cpu::rope_apply(qkv.data() + r * ld, heads + kv_heads, hd, n_rot, cs.data() + r * n_rot, neox);
      for (int64_t i = 0; i < ld; ++i) ASSERT_NEAR(got[r * ld + i], qkv[r * ld + i], 1e-5f) << (neox ? "neox" : "norm");
    }
  }
}

/// A host pool of random K/V (the reference's tiles) and a device copy of its bytes.
struct kv_fixture {
  std::unique_ptr<fw::kv_block_pool> host;
  fw::kv_handle h;
  std::unique_ptr<device_array<uint8_t>> dev;
  fw::cuda::kv_pool_desc desc;
  kv_fixture(fw::kv_dtype dt, uint32_t tokens) {
    fw::kv_layout l;
    l.n_layer = 2, l.n_head_kv = 2, l.head_dim = 64, l.block_tokens = 16, l.dtype = dt;
    auto made = fw::kv_block_pool::create(fw::kv_block_pool::next_pool_id(), l, 80);
    host = std::move(*made);
    h = *host->allocate(tokens);
    std::mt19937 rng(9);
    std::normal_distribution<float> d(0.f, 1.f);
    std::vector<float> k(64), v(64);
    for (uint32_t t = 0; t < tokens; ++t)
      for (uint32_t layer = 0; layer < 2; ++layer)
        for (uint32_t head = 0; head < 2; ++head) {
          for (auto& x : k) x = d(rng);
          for (auto& x : v) x = d(rng);
          host->write_token(h, t, layer, head, k.data(), v.data());
        }
    const auto all = host->block_data(0);
    std::vector<uint8_t> bytes(reinterpret_cast<const uint8_t*>(all.data()),
                               reinterpret_cast<const uint8_t*>(all.data()) + all.size() * host->total_blocks());
    dev = std::make_unique<device_array<uint8_t>>(bytes);
    desc.base = dev->p;
    desc.layout = {2, 2, 64, 16};
    desc.f16 = dt == fw::kv_dtype::f16;
  }
};

TEST(cuda_kernels_test, split_k_attention_matches_the_cpu_reference) {
  FW_REQUIRE_GPU();
  for (auto dt : {fw::kv_dtype::f32, fw::kv_dtype::f16}) {
    kv_fixture kv(dt, 1000);
    constexpr int n_head = 4, n_head_kv = 2, hd = 64;
    constexpr int64_t ld = (n_head + 2 * n_head_kv) * hd;
    // Rows of one sequence at several lengths; 1 row (many chunks) and 6 rows.
    for (const std::vector<int32_t>& lengths : {std::vector<int32_t>{1000}, std::vector<int32_t>{1, 2, 17, 300, 999, 1000}}) {
      const int64_t rows = static_cast<int64_t>(lengths.size());
      auto qkv = normal(rows * ld, 10);
      std::vector<int32_t> pos(rows), row_blocks(rows, 0);
      for (int64_t r = 0; r < rows; ++r) pos[r] = lengths[r] - 1;
      device_array<float> dq(qkv), out(rows * n_head * hd), ent(rows * n_head);
      device_array<int32_t> dpos(pos), dnk(lengths), drb(row_blocks);
      device_array<uint32_t> dblocks(kv.h.blocks);
      const auto plan = fw::cuda::plan_attention(rows, n_head, 1000);
      device_array<float> scratch(fw::cuda::attention_scratch_floats(rows, n_head, hd, plan));
      for (uint32_t layer = 0; layer < 2; ++layer) {
        fw::cuda::attention(dq.p, ld, out.p, n_head * hd, rows, n_head, n_head_kv, dnk.p, {dpos.p, drb.p, dblocks.p},
                            kv.desc, layer, 0.125f, plan, scratch.p, ent.p, nullptr);
        const auto got = out.get();
        const auto got_ent = ent.get();
        for (int64_t r = 0; r < rows; ++r)
          for (int h = 0; h < n_head; ++h) {
            std::vector<const void*> kt, vt;
            for (uint32_t b = 0; b < kv.h.blocks.size(); ++b)
              kt.push_back(kv.host->k_data(kv.h.blocks[b], layer, h / 2)), vt.push_back(kv.host->v_data(kv.h.blocks[b], layer, h / 2));
            const fw::cpu::kv_tiles tiles{kt.data(), vt.data(), static_cast<int>(kt.size()), 16, hd,
                                          dt == fw::kv_dtype::f16 ? fw::cpu::kv_elem::f16 : fw::cpu::kv_elem::f32};
            std::vector<float> want(hd);
            float want_ent = 0;
            const float* q = qkv.data() + r * ld + h * hd;
            float* o = want.data();
            const fw::cpu::attention_queries qs{1, &q, &o, &lengths[r], &want_ent};
            fw::cpu::ref::attention(tiles, qs, 0.125f);
            for (int e = 0; e < hd; ++e)
              ASSERT_NEAR(got[(r * n_head + h) * hd + e], want[e], attention_tolerance * (1 + std::abs(want[e])))
                  << "row " << r << " head " << h << " layer " << layer;
            ASSERT_NEAR(got_ent[r * n_head + h], want_ent, entropy_tolerance * (1 + want_ent));
          }
      }
    }
  }
}

TEST(cuda_kernels_test, stored_kv_reads_back_through_the_host_pool_layout) {
  FW_REQUIRE_GPU();
  for (auto dt : {fw::kv_dtype::f32, fw::kv_dtype::f16}) {
    kv_fixture kv(dt, 40);
    constexpr int64_t ld = 8 * 64;  // q (4 heads) | k (2) | v (2)
    const std::vector<int32_t> pos{0, 17, 39};
    auto qkv = normal(3 * ld, 12);
    device_array<float> dq(qkv);
    device_array<int32_t> dpos(pos), drb(std::vector<int32_t>{0, 0, 0});
    device_array<uint32_t> dblocks(kv.h.blocks);
    fw::cuda::store_kv(dq.p, ld, 4 * 64, 6 * 64, 3, {dpos.p, drb.p, dblocks.p}, kv.desc, 1, nullptr);
    const auto bytes = kv.dev->get();
    std::memcpy(kv.host->block_data(0).data(), bytes.data(), bytes.size());
    std::vector<float> k(64), v(64);
    for (int r = 0; r < 3; ++r)
      for (uint32_t h = 0; h < 2; ++h) {
        kv.host->read_token(kv.h, pos[r], 1, h, k.data(), v.data());
        for (int e = 0; e < 64; ++e) {
          float wk = qkv[r * ld + 4 * 64 + h * 64 + e], wv = qkv[r * ld + 6 * 64 + h * 64 + e];
          if (dt == fw::kv_dtype::f16) wk = fw::cuda::half_to_float(fw::cuda::float_to_half(wk)), wv = fw::cuda::half_to_float(fw::cuda::float_to_half(wv));
          ASSERT_EQ(k[e], wk);
          ASSERT_EQ(v[e], wv);
        }
      }
  }
}

TEST(cuda_kernels_test, embedding_rows_decode_the_tables_format) {
  FW_REQUIRE_GPU();
  constexpr int64_t vocab = 50, width = 128;
  const auto t = fw::type_traits(fw::ggml_type::q4_1);
  const size_t rb = fw::row_bytes(t, width);
  const auto src = normal(vocab * width, 13);
  std::vector<uint8_t> table(rb * vocab);
  for (int64_t r = 0; r < vocab; ++r) t.from_float(src.data() + r * width, table.data() + r * rb, width);
  device_array<uint8_t> dt(table);
  device_array<int32_t> tok(std::vector<int32_t>{49, 0, 7});
  device_array<float> x(3 * width);
  fw::cuda::embed({wfmt::q4_1, dt.p, static_cast<int64_t>(rb), vocab, width}, tok.p, 3, x.p, nullptr);
  const auto got = x.get();
  std::vector<float> want(width);
  const int ids[] = {49, 0, 7};
  for (int r = 0; r < 3; ++r) {
    t.to_float(table.data() + ids[r] * rb, want.data(), width);
    for (int64_t i = 0; i < width; ++i) ASSERT_EQ(got[r * width + i], want[i]);
  }
}

}  // namespace
