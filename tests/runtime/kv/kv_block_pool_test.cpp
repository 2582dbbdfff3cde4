#include "kernels/format/kv_q8.hpp"
#include "kernels/format/quant_ref.hpp"
#include "runtime/kv/kv_block_pool.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <random>
#include <set>
#include <thread>
#include <cmath>
#include <vector>

namespace fw {
namespace {

constexpr kv_layout small_layout{.n_layer = 2, .n_head_kv = 2, .head_dim = 4, .block_tokens = 4};

// A value unique to (tag, token, layer, head, element, K or V).
float pattern(uint32_t tag, uint32_t t, uint32_t l, uint32_t h, uint32_t e, bool is_v) {
  return static_cast<float>(tag * 100000 + t * 1000 + l * 100 + h * 10 + e) + (is_v ? 0.5f : 0.0f);
}

void write_tokens(kv_block_pool& pool, const kv_handle& h, uint32_t tag, uint32_t from,
                  uint32_t to) {
  const kv_layout& lay = pool.layout();
  for (uint32_t t = from; t < to; ++t)
    for (uint32_t l = 0; l < lay.n_layer; ++l)
      for (uint32_t hh = 0; hh < lay.n_head_kv; ++hh) {
        std::vector<float> k(lay.head_dim), v(lay.head_dim);
        for (uint32_t e = 0; e < lay.head_dim; ++e) {
          k[e] = pattern(tag, t, l, hh, e, false);
          v[e] = pattern(tag, t, l, hh, e, true);
        }
        pool.write_token(h, t, l, hh, k.data(), v.data());
      }
}

::testing::AssertionResult tokens_intact(const kv_block_pool& pool, const kv_handle& h,
                                         uint32_t tag, uint32_t n) {
  const kv_layout& lay = pool.layout();
  for (uint32_t t = 0; t < n; ++t)
    for (uint32_t l = 0; l < lay.n_layer; ++l)
      for (uint32_t hh = 0; hh < lay.n_head_kv; ++hh) {
        std::vector<float> k(lay.head_dim), v(lay.head_dim);
        pool.read_token(h, t, l, hh, k.data(), v.data());
        for (uint32_t e = 0; e < lay.head_dim; ++e) {
          if (k[e] != pattern(tag, t, l, hh, e, false) || v[e] != pattern(tag, t, l, hh, e, true))
            return ::testing::AssertionFailure() << "token " << t << " layer " << l << " head "
                                                 << hh << " element " << e;
        }
      }
  return ::testing::AssertionSuccess();
}

TEST(kv_block_pool_test, layout_and_sizes) {
  EXPECT_EQ(small_layout.tile_elems(), 16u);
  EXPECT_EQ(small_layout.block_elems(), 2u * 2 * 2 * 16);
  EXPECT_EQ(small_layout.block_bytes(), 2u * 2 * 2 * 16 * 4);
  EXPECT_EQ(small_layout.blocks_for_tokens(0), 0u);
  EXPECT_EQ(small_layout.blocks_for_tokens(4), 1u);
  EXPECT_EQ(small_layout.blocks_for_tokens(5), 2u);
  EXPECT_EQ(kv_block_pool::blocks_for_bytes(small_layout, 10 * 512 + 511), 10u);
  EXPECT_EQ(kv_block_pool::blocks_for_bytes(small_layout, 511), 0u);

  kv_block_pool pool(3, small_layout, 4);
  // K tiles of every (layer, head), then the V tiles, block after block.
  EXPECT_EQ(pool.k(0, 0, 1) - pool.k(0, 0, 0), 16);
  EXPECT_EQ(pool.k(0, 1, 0) - pool.k(0, 0, 0), 32);
  EXPECT_EQ(pool.v(0, 0, 0) - pool.k(0, 0, 0), 64);
  EXPECT_EQ(pool.k(1, 0, 0) - pool.k(0, 0, 0), 128);
  EXPECT_EQ(static_cast<const void*>(pool.block_data(1).data()), static_cast<const void*>(pool.k(1, 0, 0)));
  EXPECT_EQ(pool.block_data(1).size(), 128u * sizeof(float));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(pool.k(0, 0, 0)) % 64, 0u);
  kv_handle h = *pool.allocate(8);
  EXPECT_EQ(pool.v_row(h, 5, 1, 1), pool.v(h.blocks[1], 1, 1) + 4);
  // K tiles are transposed: element e of token t at e * block_tokens + t.
  const float k5[4] = {1, 2, 3, 4}, v5[4] = {5, 6, 7, 8};
  pool.write_token(h, 5, 1, 1, k5, v5);
  EXPECT_EQ(pool.k(h.blocks[1], 1, 1)[1], 1.f);
  EXPECT_EQ(pool.k(h.blocks[1], 1, 1)[4 + 1], 2.f);
  EXPECT_EQ(pool.k(h.blocks[1], 1, 1)[3 * 4 + 1], 4.f);
  EXPECT_EQ(pool.v(h.blocks[1], 1, 1)[4 + 3], 8.f);
}

TEST(kv_block_pool_test, create_validates) {
  auto bad = kv_block_pool::create(0, kv_layout{.n_layer = 0, .n_head_kv = 1, .head_dim = 4}, 4);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.err().code, errc::invalid_argument);
  auto ok = kv_block_pool::create(7, small_layout, 4);
  ASSERT_TRUE(ok);
  EXPECT_EQ((*ok)->pool_id(), 7u);
  EXPECT_EQ((*ok)->total_blocks(), 4u);
}

TEST(kv_block_pool_test, allocate_grow_truncate_release_accounting) {
  kv_block_pool pool(1, small_layout, 10);
  EXPECT_EQ(pool.free_blocks(), 10u);
  EXPECT_EQ(pool.usage(), 0.0);

  auto h = pool.allocate(9);  // 3 blocks
  ASSERT_TRUE(h);
  EXPECT_EQ(h->pool_id, 1u);
  EXPECT_NE(h->epoch, 0u);
  EXPECT_EQ(h->n_tokens, 0u);
  EXPECT_EQ(h->blocks.size(), 3u);
  EXPECT_EQ(pool.capacity(*h), 12u);
  EXPECT_EQ(pool.used_blocks(), 3u);
  EXPECT_EQ(pool.free_blocks(), 7u);
  EXPECT_DOUBLE_EQ(pool.usage(), 0.3);
  EXPECT_TRUE(pool.owns(*h));

  ASSERT_TRUE(pool.set_length(*h, 9));
  EXPECT_EQ(h->n_tokens, 9u);
  EXPECT_FALSE(pool.set_length(*h, 13));
  EXPECT_EQ(h->n_tokens, 9u);

  EXPECT_TRUE(pool.reserve(*h, 12));  // fits already
  EXPECT_EQ(h->blocks.size(), 3u);
  EXPECT_TRUE(pool.reserve(*h, 17));  // 5 blocks
  EXPECT_EQ(h->blocks.size(), 5u);
  EXPECT_EQ(h->n_tokens, 9u);
  EXPECT_EQ(pool.free_blocks(), 5u);
  EXPECT_TRUE(pool.owns(*h));

  ASSERT_TRUE(pool.truncate(*h, 9));  // drops the reserved capacity past the length
  EXPECT_EQ(h->blocks.size(), 3u);
  EXPECT_EQ(pool.free_blocks(), 7u);
  EXPECT_FALSE(pool.truncate(*h, 10));  // cannot grow by truncating

  auto empty = pool.allocate(0);
  ASSERT_TRUE(empty);
  EXPECT_TRUE(empty->empty());
  EXPECT_TRUE(pool.owns(*empty));
  EXPECT_TRUE(pool.reserve(*empty, 1));
  EXPECT_EQ(empty->blocks.size(), 1u);

  ASSERT_TRUE(pool.release(*h));
  EXPECT_TRUE(h->empty());
  EXPECT_EQ(h->n_tokens, 0u);
  ASSERT_TRUE(pool.release(*empty));
  EXPECT_EQ(pool.free_blocks(), 10u);
  EXPECT_EQ(pool.used_blocks(), 0u);

  kv_handle fresh;  // a default handle is allocated by reserve
  EXPECT_TRUE(pool.reserve(fresh, 4));
  EXPECT_EQ(fresh.pool_id, 1u);
  EXPECT_TRUE(pool.owns(fresh));
  EXPECT_TRUE(pool.release(fresh));
}

TEST(kv_block_pool_test, exhaustion_is_a_value_and_recovers) {
  kv_block_pool pool(1, small_layout, 4);
  auto a = pool.allocate(12);  // 3 blocks
  ASSERT_TRUE(a);
  EXPECT_FALSE(pool.allocate(8).has_value());  // needs 2, 1 free
  EXPECT_EQ(pool.free_blocks(), 1u);

  kv_handle before = *a;
  EXPECT_FALSE(pool.reserve(*a, 20));  // needs 2 more
  EXPECT_EQ(*a, before);               // unchanged
  EXPECT_EQ(pool.free_blocks(), 1u);
  EXPECT_TRUE(pool.reserve(*a, 16));
  EXPECT_EQ(pool.free_blocks(), 0u);
  EXPECT_FALSE(pool.allocate(1).has_value());
  EXPECT_TRUE(pool.allocate(0).has_value());

  ASSERT_TRUE(pool.release(*a));
  auto b = pool.allocate(16);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->blocks.size(), 4u);
}

TEST(kv_block_pool_test, truncate_frees_the_right_blocks_and_keeps_data) {
  kv_block_pool pool(1, small_layout, 8);
  auto h = pool.allocate(20);  // 5 blocks
  ASSERT_TRUE(h);
  write_tokens(pool, *h, 1, 0, 20);
  ASSERT_TRUE(pool.set_length(*h, 20));
  const std::vector<uint32_t> blocks = h->blocks;

  ASSERT_TRUE(pool.truncate(*h, 9));  // keeps ceil(9/4) = 3 blocks
  EXPECT_EQ(h->n_tokens, 9u);
  EXPECT_EQ(h->blocks, std::vector<uint32_t>(blocks.begin(), blocks.begin() + 3));
  EXPECT_EQ(pool.free_blocks(), 5u);
  EXPECT_TRUE(tokens_intact(pool, *h, 1, 9));

  // The freed blocks are exactly the dropped ones: a new allocation of the rest gets them.
  auto other = pool.allocate(20);
  ASSERT_TRUE(other);
  std::set<uint32_t> got(other->blocks.begin(), other->blocks.end());
  for (uint32_t b : {blocks[3], blocks[4]}) EXPECT_TRUE(got.count(b)) << b;
  for (uint32_t b : h->blocks) EXPECT_FALSE(got.count(b)) << b;
  write_tokens(pool, *other, 2, 0, 20);
  EXPECT_TRUE(tokens_intact(pool, *h, 1, 9));

  ASSERT_TRUE(pool.truncate(*h, 8));  // on a block boundary: 2 blocks
  EXPECT_EQ(h->blocks.size(), 2u);
  ASSERT_TRUE(pool.truncate(*h, 0));
  EXPECT_TRUE(h->empty());
  EXPECT_TRUE(pool.owns(*h));  // still a live (empty) allocation
  EXPECT_TRUE(pool.reserve(*h, 4));
  EXPECT_TRUE(pool.release(*h));
  EXPECT_TRUE(pool.release(*other));
  EXPECT_EQ(pool.free_blocks(), 8u);
}

TEST(kv_block_pool_test, double_release_is_detected) {
  kv_block_pool pool(1, small_layout, 8);
  auto h = pool.allocate(8);
  ASSERT_TRUE(h);
  kv_handle copy = *h;
  ASSERT_TRUE(pool.release(*h));
  EXPECT_FALSE(pool.owns(copy));
  auto again = pool.release(copy);
  ASSERT_FALSE(again);
  EXPECT_EQ(again.err().code, errc::invalid_argument);
  EXPECT_NE(again.err().message.find("stale"), std::string::npos) << again.err().message;
  EXPECT_EQ(pool.free_blocks(), 8u);

  // Even after the same blocks went to someone else.
  auto other = pool.allocate(8);
  ASSERT_TRUE(other);
  EXPECT_EQ(std::set<uint32_t>(other->blocks.begin(), other->blocks.end()),
            std::set<uint32_t>(copy.blocks.begin(), copy.blocks.end()));
  EXPECT_FALSE(pool.release(copy));
  EXPECT_FALSE(pool.truncate(copy, 0));
  EXPECT_FALSE(pool.reserve(copy, 100));
  EXPECT_TRUE(pool.owns(*other));
  EXPECT_EQ(pool.free_blocks(), 6u);
  EXPECT_TRUE(pool.release(*other));
  EXPECT_EQ(pool.free_blocks(), 8u);
}

TEST(kv_block_pool_test, stale_and_foreign_handles_are_detected) {
  kv_block_pool pool(1, small_layout, 8);
  kv_block_pool other_pool(2, small_layout, 8);
  auto h = pool.allocate(8);
  ASSERT_TRUE(h);
  auto empty = pool.allocate(0);
  ASSERT_TRUE(empty);

  EXPECT_FALSE(other_pool.owns(*h));
  auto foreign = other_pool.release(*h);
  ASSERT_FALSE(foreign);
  EXPECT_NE(foreign.err().message.find("pool 2"), std::string::npos) << foreign.err().message;
  EXPECT_FALSE(other_pool.set_length(*h, 1));

  pool.reset();
  EXPECT_EQ(pool.free_blocks(), 8u);
  EXPECT_FALSE(pool.owns(*h));
  EXPECT_FALSE(pool.owns(*empty));
  auto reused = pool.allocate(32);
  ASSERT_TRUE(reused);
  EXPECT_FALSE(pool.owns(*h));
  EXPECT_FALSE(pool.release(*h));
  EXPECT_TRUE(pool.owns(*reused));

  kv_handle forged = *reused;  // a block out of range
  forged.blocks.push_back(99);
  EXPECT_FALSE(pool.owns(forged));
  EXPECT_FALSE(pool.release(forged));
  EXPECT_EQ(pool.free_blocks(), 0u);
  EXPECT_TRUE(pool.release(*reused));
}

TEST(kv_block_pool_test, handles_do_not_share_data) {
  kv_block_pool pool(1, small_layout, 16);
  std::vector<kv_handle> handles;
  for (uint32_t i = 0; i < 4; ++i) {
    auto h = pool.allocate(13);
    ASSERT_TRUE(h);
    handles.push_back(*h);
  }
  std::set<uint32_t> all;
  for (const kv_handle& h : handles) all.insert(h.blocks.begin(), h.blocks.end());
  EXPECT_EQ(all.size(), 16u);
  for (uint32_t i = 0; i < 4; ++i) write_tokens(pool, handles[i], i + 1, 0, 13);
  for (uint32_t i = 0; i < 4; ++i) EXPECT_TRUE(tokens_intact(pool, handles[i], i + 1, 13));
  write_tokens(pool, handles[2], 9, 0, 13);  // rewrite one
  for (uint32_t i : {0u, 1u, 3u}) EXPECT_TRUE(tokens_intact(pool, handles[i], i + 1, 13));
  EXPECT_TRUE(tokens_intact(pool, handles[2], 9, 13));
}

TEST(kv_block_pool_test, concurrent_allocate_release_without_leaks) {
  kv_block_pool pool(1, small_layout, 64);
  std::atomic<int> failures{0};
  std::atomic<int> exhausted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(t);
      std::vector<kv_handle> mine;
      for (int i = 0; i < 3000; ++i) {
        const uint32_t op = rng() % 4;
        if (op == 0 || mine.empty()) {
          if (auto h = pool.allocate(rng() % 24)) {
            // Stamp the blocks; another thread holding them would show up below.
            for (uint32_t b : h->blocks) pool.k(b, 0, 0)[0] = static_cast<float>(t);
            mine.push_back(std::move(*h));
          } else {
            ++exhausted;
          }
        } else if (op == 1) {
          kv_handle& h = mine[rng() % mine.size()];
          if (pool.reserve(h, pool.capacity(h) + 1 + rng() % 8))
            for (uint32_t b : h.blocks) pool.k(b, 0, 0)[0] = static_cast<float>(t);
        } else if (op == 2) {
          kv_handle& h = mine[rng() % mine.size()];
          if (!pool.set_length(h, pool.capacity(h)) || !pool.truncate(h, h.n_tokens / 2))
            ++failures;
        } else {
          const size_t k = rng() % mine.size();
          for (uint32_t b : mine[k].blocks)
            if (pool.k(b, 0, 0)[0] != static_cast<float>(t)) ++failures;
          if (!pool.release(mine[k])) ++failures;
          mine.erase(mine.begin() + static_cast<std::ptrdiff_t>(k));
        }
      }
      for (kv_handle& h : mine)
        if (!pool.release(h)) ++failures;
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(pool.free_blocks(), 64u);
  EXPECT_EQ(pool.used_blocks(), 0u);
  // Every block is back exactly once: all 64 can be allocated together, and no more.
  auto all = pool.allocate(64 * 4);
  ASSERT_TRUE(all);
  EXPECT_EQ(std::set<uint32_t>(all->blocks.begin(), all->blocks.end()).size(), 64u);
  EXPECT_FALSE(pool.allocate(1));
}

TEST(kv_block_pool_test, half_precision_pool_rounds_and_converts_on_copy) {
  kv_layout half = small_layout;
  half.dtype = kv_dtype::f16;
  EXPECT_EQ(half.block_bytes() * 2, small_layout.block_bytes());
  kv_block_pool h16(1, half, 4), f32(2, small_layout, 4), h16b(3, half, 4);
  auto h = h16.allocate(5);
  ASSERT_TRUE(h);
  const float k[4] = {0.5f, -1.25f, 1.f / 3.f, 70000.f}, v[4] = {2.f, 0.1f, -0.f, 1e-8f};
  for (uint32_t t = 0; t < 5; ++t) h16.write_token(*h, t, 1, 1, k, v);
  ASSERT_TRUE(h16.set_length(*h, 5));
  float rk[4], rv[4];
  h16.read_token(*h, 4, 1, 1, rk, rv);
  EXPECT_EQ(rk[0], 0.5f);
  EXPECT_EQ(rk[1], -1.25f);
  EXPECT_EQ(rk[2], 0.333251953125f);  // 1/3 to 11 significant bits
  EXPECT_TRUE(std::isinf(rk[3]));     // past the half range
  EXPECT_EQ(rv[1], fp16_to_fp32(fp32_to_fp16(0.1f)));
  // Into a float32 pool (converted token by token) and another half pool (tile copies).
  kv_handle a, b;
  ASSERT_TRUE(f32.copy_tokens(h16, *h, a));
  ASSERT_TRUE(h16b.copy_tokens(h16, *h, b));
  for (uint32_t t = 0; t < 5; ++t) {
    float ak[4], av[4], bk[4], bv[4];
    f32.read_token(a, t, 1, 1, ak, av);
    h16b.read_token(b, t, 1, 1, bk, bv);
    for (int e = 0; e < 4; ++e) {
      EXPECT_EQ(ak[e], rk[e]) << t << "," << e;
      EXPECT_EQ(bk[e], rk[e]) << t << "," << e;
      EXPECT_EQ(av[e], rv[e]) << t << "," << e;
      EXPECT_EQ(bv[e], rv[e]) << t << "," << e;
    }
  }
}

TEST(kv_block_pool_test, copy_tokens_between_pools) {
  kv_block_pool src(1, small_layout, 8);
  kv_block_pool dst(2, small_layout, 8);
  auto from = src.allocate(11);
  ASSERT_TRUE(from);
  write_tokens(src, *from, 5, 0, 11);
  ASSERT_TRUE(src.set_length(*from, 11));

  auto hog = dst.allocate(4);  // so dst's block ids differ from src's
  ASSERT_TRUE(hog);
  kv_handle to;
  ASSERT_TRUE(dst.copy_tokens(src, *from, to));
  EXPECT_EQ(to.pool_id, 2u);
  EXPECT_EQ(to.n_tokens, 11u);
  EXPECT_EQ(to.blocks.size(), 3u);
  EXPECT_TRUE(dst.owns(to));
  EXPECT_TRUE(tokens_intact(dst, to, 5, 11));
  EXPECT_TRUE(tokens_intact(src, *from, 5, 11));

  // Into an existing handle: grows it, length follows the source.
  auto existing = dst.allocate(0);
  ASSERT_TRUE(existing);
  ASSERT_TRUE(dst.copy_tokens(src, *from, *existing));
  EXPECT_TRUE(tokens_intact(dst, *existing, 5, 11));

  // Different block size, same per-token shape.
  kv_layout big = small_layout;
  big.block_tokens = 16;
  kv_block_pool wide(3, big, 2);
  kv_handle w;
  ASSERT_TRUE(wide.copy_tokens(src, *from, w));
  EXPECT_EQ(w.blocks.size(), 1u);
  EXPECT_TRUE(tokens_intact(wide, w, 5, 11));
  kv_handle back;
  ASSERT_TRUE(src.copy_tokens(wide, w, back));  // and back again, within pool 1's free blocks
  EXPECT_TRUE(tokens_intact(src, back, 5, 11));

  // Errors: exhausted destination (to unchanged), stale source, layout mismatch, self copy.
  kv_block_pool tiny(4, small_layout, 2);
  kv_handle t;
  auto full = tiny.copy_tokens(src, *from, t);
  ASSERT_FALSE(full);
  EXPECT_EQ(full.err().code, errc::out_of_memory);
  EXPECT_EQ(t, kv_handle{});
  EXPECT_EQ(tiny.free_blocks(), 2u);

  kv_handle stale = back;
  ASSERT_TRUE(src.release(back));
  kv_handle u;
  EXPECT_FALSE(dst.copy_tokens(src, stale, u));

  kv_layout other_shape = small_layout;
  other_shape.head_dim = 8;
  kv_block_pool mismatched(5, other_shape, 8);
  kv_handle m;
  EXPECT_FALSE(mismatched.copy_tokens(src, *from, m));

  kv_handle self = *from;
  EXPECT_FALSE(src.copy_tokens(src, *from, self));
  kv_handle fork;  // a copy within one pool is fine
  ASSERT_TRUE(src.copy_tokens(src, *from, fork));
  EXPECT_TRUE(tokens_intact(src, fork, 5, 11));
}

}  // namespace
}  // namespace fw

namespace fw {
namespace {

TEST(kv_block_pool_ids, every_backend_pool_has_its_own_id_and_refuses_the_others_handles) {
  const kv_layout l{.n_layer = 1, .n_head_kv = 1, .head_dim = 4};
  kv_block_pool a(kv_block_pool::next_pool_id(), l, 4), b(kv_block_pool::next_pool_id(), l, 4);
  EXPECT_NE(a.pool_id(), b.pool_id());
  auto h = a.allocate(8);
  ASSERT_TRUE(h);
  EXPECT_FALSE(b.owns(*h));
  kv_handle stolen = *h;
  EXPECT_FALSE(b.release(stolen)) << "a handle of another pool is refused, not freed";
  EXPECT_EQ(a.used_blocks(), 1u);
  ASSERT_TRUE(a.release(*h));
}

}  // namespace
}  // namespace fw

namespace fw {
namespace {

TEST(kv_block_table_test, the_book_alone_lends_checks_and_takes_back_blocks) {
  kv_block_table t(7, 16, 4);
  auto a = t.allocate(20);  // two blocks
  ASSERT_TRUE(a);
  EXPECT_EQ(a->pool_id, 7u);
  EXPECT_EQ(a->blocks.size(), 2u);
  EXPECT_EQ(t.free_blocks(), 2u);
  kv_handle copy = *a;
  ASSERT_TRUE(t.release(*a));
  EXPECT_EQ(t.free_blocks(), 4u);
  auto stale = t.release(copy);
  ASSERT_FALSE(stale) << "a copy of a released handle is stale";
  EXPECT_NE(stale.err().message.find("stale"), std::string::npos) << stale.err().message;
  EXPECT_EQ(t.free_blocks(), 4u) << "the free list is not corrupted";

  kv_handle grown;
  ASSERT_TRUE(t.grow(grown, 40));  // a default handle becomes an allocation of three blocks
  EXPECT_EQ(grown.blocks.size(), 3u);
  EXPECT_EQ(t.grow(grown, 80).err().code, errc::out_of_memory);
  EXPECT_EQ(grown.blocks.size(), 3u) << "unchanged on failure";
  grown.n_tokens = 40;
  ASSERT_TRUE(t.truncate(grown, 10));
  EXPECT_EQ(grown.blocks.size(), 1u);
  t.reset();
  EXPECT_FALSE(t.check(grown)) << "reset makes every handle stale";
  EXPECT_EQ(t.free_blocks(), 4u);
}

}  // namespace
}  // namespace fw

namespace fw {
namespace {

// A q8 pool (kv_cache.type = "q8_0"): a tile is its int8 elements then one float scale per token;
// a token reads back within half a step (max |x| / 127 / 2) of what was written, an all-zero row
// exactly, a non-finite row as NaN; copies between q8 pools are tile copies (the same bytes), into
// a float pool the dequantized values; a layout whose scales would be misaligned is refused.
TEST(kv_block_pool_test, q8_pool_quantizes_per_token_and_copies) {
  kv_layout q8 = small_layout;  // head_dim 4, block_tokens 4
  q8.dtype = kv_dtype::q8;
  EXPECT_EQ(q8.tile_bytes(), 4u * 4 + 4 * sizeof(float));
  EXPECT_EQ(q8.block_bytes(), 2u * 2 * 2 * q8.tile_bytes());
  kv_block_pool p8(1, q8, 4), f32(2, small_layout, 4), p8b(3, q8, 4);
  auto h = p8.allocate(6);
  ASSERT_TRUE(h);
  const float k[4] = {0.5f, -1.27f, 1.f / 3.f, 0.01f}, v[4] = {2.f, 0.1f, -0.f, -2.f};
  const float zero[4] = {0, 0, 0, 0}, bad[4] = {1.f, NAN, 0.f, 2.f};
  for (uint32_t t = 0; t < 6; ++t) p8.write_token(*h, t, 1, 1, t == 2 ? zero : k, t == 3 ? bad : v);
  ASSERT_TRUE(p8.set_length(*h, 6));
  float rk[4], rv[4];
  p8.read_token(*h, 5, 1, 1, rk, rv);
  for (int e = 0; e < 4; ++e) {
    EXPECT_NEAR(rk[e], k[e], 1.27f / 127 / 2 * 1.0001f) << e;
    EXPECT_NEAR(rv[e], v[e], 2.f / 127 / 2 * 1.0001f) << e;
  }
  EXPECT_EQ(rk[1], -1.27f);  // the largest element is exact (it is +-127 steps)
  EXPECT_EQ(rv[0], 2.f);
  // K is transposed in its tile: element e of token 5 (tile 1, slot 1) at e * 4 + 1, its scale after.
  const auto* kt = static_cast<const int8_t*>(p8.k_data(h->blocks[1], 1, 1));
  EXPECT_EQ(kt[1 * 4 + 1], -127);
  EXPECT_FLOAT_EQ(q8_tile_scales(kt, 4, 4)[1], 1.27f / 127);
  p8.read_token(*h, 2, 1, 1, rk, rv);
  for (int e = 0; e < 4; ++e) EXPECT_EQ(rk[e], 0.f);
  p8.read_token(*h, 3, 1, 1, rk, rv);
  EXPECT_TRUE(std::isnan(rv[0]));
  // Into another q8 pool (tile copies: the same bytes) and a float pool (dequantized).
  kv_handle a, b;
  ASSERT_TRUE(f32.copy_tokens(p8, *h, a));
  ASSERT_TRUE(p8b.copy_tokens(p8, *h, b));
  for (uint32_t t = 0; t < 6; ++t) {
    float pk[4], pv[4], ak[4], av[4], bk[4], bv[4];
    p8.read_token(*h, t, 1, 1, pk, pv);
    f32.read_token(a, t, 1, 1, ak, av);
    p8b.read_token(b, t, 1, 1, bk, bv);
    for (int e = 0; e < 4; ++e) {
      if (t == 3) continue;  // NaN != NaN
      EXPECT_EQ(ak[e], pk[e]) << t << "," << e;
      EXPECT_EQ(bk[e], pk[e]) << t << "," << e;
      EXPECT_EQ(av[e], pv[e]) << t << "," << e;
      EXPECT_EQ(bv[e], pv[e]) << t << "," << e;
    }
  }
  // Rows of subnormal values: no infinite reciprocal, no NaN (found by the kv_stream fuzzer).
  const float tiny_k[4] = {1e-40f, 0.f, -3e-41f, 0.f}, tiny_v[4] = {0.f, 0.f, 1e-44f, 0.f};
  p8.write_token(*h, 0, 0, 0, tiny_k, tiny_v);
  p8.read_token(*h, 0, 0, 0, rk, rv);
  for (int e = 0; e < 4; ++e) {
    EXPECT_TRUE(std::isfinite(rk[e]) && std::isfinite(rv[e])) << e;
    EXPECT_NEAR(rk[e], tiny_k[e], 1e-40f) << e;
  }
  auto odd = kv_block_pool::create(0, kv_layout{.n_layer = 1, .n_head_kv = 1, .head_dim = 3, .block_tokens = 3,
                                                .dtype = kv_dtype::q8}, 4);
  ASSERT_FALSE(odd);
  EXPECT_NE(odd.err().message.find("multiple of 4"), std::string::npos) << odd.err().message;
}

}  // namespace
}  // namespace fw
