// kv_codec: a sequence's KV as a checksummed stream between pools of different block sizes and
// element types. f32 on the wire is exact, f16 within half precision, int8 within half a
// quantization step; every damaged, truncated, extended, mis-shaped or hostile stream is refused
// with a "kv stream:" message and leaves the destination pool and handle exactly as they were.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>

#include "runtime/kv/kv_codec.hpp"
#include "tests/support/kv_test_pools.hpp"

namespace fw {
namespace {

constexpr float f16_rel_tolerance = 1.0f / 2048;  // 11 significant bits

kv_layout shape(uint32_t block_tokens, kv_dtype dt = kv_dtype::f32, uint32_t layers = 3, uint32_t heads = 2,
                uint32_t hd = 64) {
  return test::kv_shape(block_tokens, dt, layers, heads, hd);
}
std::unique_ptr<kv_block_pool> make_pool(kv_layout l, uint32_t blocks = 64) { return test::make_kv_pool(l, blocks); }
kv_handle fill(kv_block_pool& pool, uint32_t n, uint32_t seed = 5) { return test::fill_kv(pool, n, seed); }

/// Largest |a - b| / tol(a) over every element of the first n tokens; tol(a) = rel * |a| + abs.
double worst(const kv_block_pool& a, const kv_handle& ha, const kv_block_pool& b, const kv_handle& hb, uint32_t n,
             double rel, double abs) {
  const auto& l = a.layout();
  std::vector<float> k1(l.head_dim), v1(l.head_dim), k2(l.head_dim), v2(l.head_dim);
  double w = 0;
  for (uint32_t t = 0; t < n; ++t)
    for (uint32_t layer = 0; layer < l.n_layer; ++layer)
      for (uint32_t head = 0; head < l.n_head_kv; ++head) {
        a.read_token(ha, t, layer, head, k1.data(), v1.data());
        b.read_token(hb, t, layer, head, k2.data(), v2.data());
        for (uint32_t e = 0; e < l.head_dim; ++e) {
          w = std::max(w, std::fabs(k1[e] - k2[e]) / (rel * std::fabs(k1[e]) + abs));
          w = std::max(w, std::fabs(v1[e] - v2[e]) / (rel * std::fabs(v1[e]) + abs));
        }
      }
  return w;
}

/// Recomputes both checksums after a deliberate edit (a sender that forges them).
void reseal(std::vector<std::byte>& s) {
  const uint32_t pc = crc32c(std::span<const std::byte>(s).subspan(kv_stream_header_bytes));
  std::memcpy(s.data() + 32, &pc, 4);
  const uint32_t hc = crc32c(std::span<const std::byte>(s.data(), 36));
  std::memcpy(s.data() + 36, &hc, 4);
}

TEST(kv_codec_test, f32_moves_exactly_between_block_sizes) {
  auto src = make_pool(shape(16));
  auto dst = make_pool(shape(4), 256);
  auto h = fill(*src, 37);
  auto s = kv_encode(*src, h, kv_wire::f32);
  ASSERT_TRUE(s.has_value()) << s.err().message;
  EXPECT_EQ(s->size(), kv_stream_header_bytes + kv_f32_bytes(src->layout(), 37));
  kv_handle to;
  ASSERT_TRUE(kv_decode(*s, *dst, to).has_value());
  EXPECT_EQ(to.n_tokens, 37u);
  EXPECT_EQ(to.blocks.size(), 10u);  // ceil(37 / 4)
  EXPECT_EQ(worst(*src, h, *dst, to, 37, 0, 1e-30), 0.0);
}

TEST(kv_codec_test, f16_and_int8_stay_within_their_tolerances_and_shrink_the_stream) {
  auto src = make_pool(shape(16));
  auto dst = make_pool(shape(32));
  auto h = fill(*src, 50);
  const double f32 = static_cast<double>(kv_f32_bytes(src->layout(), 50));
  auto s16 = kv_encode(*src, h, kv_wire::f16);
  ASSERT_TRUE(s16.has_value());
  kv_handle a;
  ASSERT_TRUE(kv_decode(*s16, *dst, a).has_value());
  EXPECT_LE(worst(*src, h, *dst, a, 50, f16_rel_tolerance, 1e-7), 1.0);
  EXPECT_NEAR((s16->size() - kv_stream_header_bytes) / f32, 0.5, 1e-9);
  auto s8 = kv_encode(*src, h, kv_wire::int8);
  ASSERT_TRUE(s8.has_value());
  kv_handle b;
  ASSERT_TRUE(kv_decode(*s8, *dst, b).has_value());
  // Half a step of the largest row's scale: |x| of N(0, 2) over 64 values stays below ~10.
  EXPECT_LE(worst(*src, h, *dst, b, 50, 0, 0.5 * 10.0 / 127), 1.0);
  EXPECT_GT(worst(*src, h, *dst, b, 50, 0, 1e-6), 1.0);  // it is lossy
  EXPECT_NEAR((s8->size() - kv_stream_header_bytes) / f32, (4.0 + 64) / (64 * 4), 1e-9);
}

// A q8 pool (kv_cache.type = "q8_0") moves as int8 rows without loss: the rows are its own
// values, and re-quantizing them into another q8 pool (another block size) gives back every
// value; into an f16 pool over the f16 wire, the dequantized values within half precision; and a
// float pool's KV into a q8 pool is quantized as the pool quantizes it.
TEST(kv_codec_test, a_q8_pool_moves_as_int8_rows_without_loss_and_converts_to_the_other_types) {
  auto src = make_pool(shape(16, kv_dtype::q8));
  auto h = fill(*src, 41);
  auto s8 = kv_encode(*src, h, kv_wire::int8);
  ASSERT_TRUE(s8.has_value()) << s8.err().message;
  auto dst8 = make_pool(shape(32, kv_dtype::q8));
  kv_handle a;
  ASSERT_TRUE(kv_decode(*s8, *dst8, a).has_value());
  EXPECT_EQ(worst(*src, h, *dst8, a, 41, 0, 1e-30), 0.0);
  auto dst16 = make_pool(shape(16, kv_dtype::f16));
  auto s16 = kv_encode(*src, h, kv_wire::f16);
  ASSERT_TRUE(s16.has_value());
  kv_handle b;
  ASSERT_TRUE(kv_decode(*s16, *dst16, b).has_value());
  EXPECT_LE(worst(*src, h, *dst16, b, 41, f16_rel_tolerance, 1e-7), 1.0);

  auto f32 = make_pool(shape(16));
  auto hf = fill(*f32, 41);
  auto sf = kv_encode(*f32, hf, kv_wire::f32);
  ASSERT_TRUE(sf.has_value());
  kv_handle c;
  ASSERT_TRUE(kv_decode(*sf, *dst8, c).has_value());
  EXPECT_LE(worst(*f32, hf, *dst8, c, 41, 0, 0.5 * 10.0 / 127), 1.0);
  EXPECT_GT(worst(*f32, hf, *dst8, c, 41, 0, 1e-6), 1.0);  // it is lossy
}

TEST(kv_codec_test, f16_pool_to_f32_pool_keeps_the_half_values_and_count_takes_a_prefix) {
  auto src = make_pool(shape(16, kv_dtype::f16));
  auto dst = make_pool(shape(16, kv_dtype::f32));
  auto h = fill(*src, 40);
  auto s = kv_encode(*src, h, kv_wire::f32, 21);
  ASSERT_TRUE(s.has_value());
  kv_handle to;
  ASSERT_TRUE(kv_decode(*s, *dst, to).has_value());
  EXPECT_EQ(to.n_tokens, 21u);
  EXPECT_EQ(worst(*src, h, *dst, to, 21, 0, 1e-30), 0.0);
  auto empty = kv_encode(*src, h, kv_wire::f16, 0);
  ASSERT_TRUE(empty.has_value());
  kv_handle none;
  ASSERT_TRUE(kv_decode(*empty, *dst, none).has_value());
  EXPECT_EQ(none.n_tokens, 0u);
}

TEST(kv_codec_test, damaged_streams_are_refused_and_change_nothing) {
  auto src = make_pool(shape(16));
  auto dst = make_pool(shape(16), 8);
  auto h = fill(*src, 20);
  auto good = kv_encode(*src, h, kv_wire::f16);
  ASSERT_TRUE(good.has_value());
  auto existing = fill(*dst, 3, 9);
  const kv_handle before = existing;
  const uint32_t used = dst->used_blocks();
  auto refused = [&](std::vector<std::byte> bytes, const std::string& what) {
    kv_handle to = existing;
    auto r = kv_decode(bytes, *dst, to);
    EXPECT_FALSE(r.has_value()) << what;
    if (r.has_value()) return;
    EXPECT_EQ(r.err().message.rfind("kv stream: ", 0), 0u) << r.err().message;
    EXPECT_NE(r.err().message.find(what), std::string::npos) << r.err().message;
    EXPECT_EQ(to, before);
    EXPECT_EQ(dst->used_blocks(), used);
  };
  // A flipped bit anywhere: magic, version, each header field, both checksums, the payload.
  for (size_t pos : {size_t{0}, size_t{4}, size_t{6}, size_t{8}, size_t{20}, size_t{24}, size_t{33}, size_t{38}}) {
    auto b = *good;
    b[pos] ^= std::byte{0x04};
    kv_handle to = existing;
    EXPECT_FALSE(kv_decode(b, *dst, to).has_value()) << "header byte " << pos;
    EXPECT_EQ(to, before);
  }
  for (size_t pos : {kv_stream_header_bytes, kv_stream_header_bytes + 1000, good->size() - 1}) {
    auto b = *good;
    b[pos] ^= std::byte{0x01};
    refused(b, "payload checksum mismatch");
  }
  auto v = *good;
  v[4] = std::byte{7};
  refused(v, "version 7 is not supported (this build reads version 1)");
  auto m = *good;
  m[0] = std::byte{'X'};
  refused(m, "bad magic");
  for (size_t len : {size_t{0}, size_t{3}, kv_stream_header_bytes - 1})
    refused(std::vector<std::byte>(good->begin(), good->begin() + len), "shorter than the 40-byte header");
  for (size_t len : {kv_stream_header_bytes, good->size() / 2, good->size() - 1})
    refused(std::vector<std::byte>(good->begin(), good->begin() + len), "truncated");
  auto extra = *good;
  extra.push_back(std::byte{0});
  refused(extra, "trailing bytes");
  // Another shape.
  auto other = make_pool(shape(16, kv_dtype::f32, 3, 4, 32));
  kv_handle to;
  auto r = kv_decode(*good, *other, to);
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.err().message.find("shape 3 layers x 2 KV heads x 64 does not match the destination pool's 3 x 4 x 32"),
            std::string::npos)
      << r.err().message;
  EXPECT_EQ(other->used_blocks(), 0u);
  // Too few blocks: out of memory, nothing allocated.
  auto big = fill(*src, 200);
  auto sb = kv_encode(*src, big, kv_wire::f16);
  ASSERT_TRUE(sb.has_value());
  kv_handle t2 = existing;
  r = kv_decode(*sb, *dst, t2);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.err().code, errc::out_of_memory);
  EXPECT_EQ(t2, before);
  EXPECT_EQ(dst->used_blocks(), used);
}

TEST(kv_codec_test, a_hostile_header_is_refused_before_anything_is_allocated) {
  auto src = make_pool(shape(16));
  auto h = fill(*src, 2);
  auto s = kv_encode(*src, h, kv_wire::f32);
  ASSERT_TRUE(s.has_value());
  // Claim 2^31 tokens with a consistent header checksum: the size check refuses it.
  auto b = *s;
  const uint32_t n = 1u << 31;
  std::memcpy(b.data() + 20, &n, 4);
  reseal(b);
  auto r = kv_peek(b);
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.err().message.find("does not match its shape"), std::string::npos) << r.err().message;
}

TEST(kv_codec_test, a_forged_int8_scale_with_valid_checksums_is_refused) {
  auto src = make_pool(shape(16));
  auto dst = make_pool(shape(16));
  auto h = fill(*src, 5);
  auto s = kv_encode(*src, h, kv_wire::int8);
  ASSERT_TRUE(s.has_value());
  const float nan = std::nanf("");
  std::memcpy(s->data() + kv_stream_header_bytes + 3 * (4 + 64), &nan, 4);  // the fourth row's scale
  reseal(*s);
  kv_handle to;
  auto r = kv_decode(*s, *dst, to);
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.err().message.find("int8 row scale"), std::string::npos) << r.err().message;
  EXPECT_EQ(dst->used_blocks(), 0u);
}

TEST(kv_codec_test, decoding_into_an_existing_shorter_handle_grows_it) {
  auto src = make_pool(shape(16));
  auto dst = make_pool(shape(16));
  auto h = fill(*src, 45);
  auto s = kv_encode(*src, h, kv_wire::f32);
  ASSERT_TRUE(s.has_value());
  auto to = dst->allocate(100);  // a decode reservation: room for prompt and answer
  ASSERT_TRUE(to.has_value());
  const auto blocks = to->blocks;
  ASSERT_TRUE(kv_decode(*s, *dst, *to).has_value());
  EXPECT_EQ(to->n_tokens, 45u);
  EXPECT_EQ(to->blocks, blocks);  // the reservation is kept
  EXPECT_EQ(worst(*src, h, *dst, *to, 45, 0, 1e-30), 0.0);
}

TEST(kv_codec_test, throughput_of_a_smollm2_shaped_sequence) {
  // Prints only: 30 layers, 3 KV heads, head_dim 64, 2048 tokens, f16 cache.
  auto src = make_pool(shape(16, kv_dtype::f16, 30, 3, 64), 128);
  auto dst = make_pool(shape(16, kv_dtype::f16, 30, 3, 64), 128);
  auto h = fill(*src, 2048);
  for (kv_wire w : {kv_wire::f32, kv_wire::f16, kv_wire::int8}) {
    const auto t0 = std::chrono::steady_clock::now();
    auto s = kv_encode(*src, h, w);
    const auto t1 = std::chrono::steady_clock::now();
    kv_handle to;
    ASSERT_TRUE(s.has_value() && kv_decode(*s, *dst, to).has_value());
    const auto t2 = std::chrono::steady_clock::now();
    std::printf("kv_codec %-4s 2048 tokens: %.1f MB, encode %.1f ms, decode %.1f ms\n", to_string(w), s->size() / 1e6,
                std::chrono::duration<double, std::milli>(t1 - t0).count(),
                std::chrono::duration<double, std::milli>(t2 - t1).count());
    ASSERT_TRUE(dst->release(to).has_value());
  }
}

}  // namespace
}  // namespace fw
