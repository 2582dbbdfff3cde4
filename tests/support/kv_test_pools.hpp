// Pools and sequences of random KV for the kv_codec and kv_stream tests.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <vector>

#include "runtime/kv/kv_block_pool.hpp"

namespace fw::test {

inline kv_layout kv_shape(uint32_t block_tokens, kv_dtype dt = kv_dtype::f32, uint32_t layers = 3, uint32_t heads = 2,
                          uint32_t hd = 64) {
  kv_layout l;
  l.n_layer = layers;
  l.n_head_kv = heads;
  l.head_dim = hd;
  l.block_tokens = block_tokens;
  l.dtype = dt;
  return l;
}

inline std::unique_ptr<kv_block_pool> make_kv_pool(kv_layout l, uint32_t blocks = 64) {
  auto p = kv_block_pool::create(kv_block_pool::next_pool_id(), l, blocks);
  EXPECT_TRUE(p.has_value());
  return std::move(*p);
}

/// A sequence of n tokens of normal(0, 2) K and V, its length set.
inline kv_handle fill_kv(kv_block_pool& pool, uint32_t n, uint32_t seed = 5) {
  auto h = pool.allocate(n);
  EXPECT_TRUE(h.has_value());
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 2.0f);
  const auto& l = pool.layout();
  std::vector<float> k(l.head_dim), v(l.head_dim);
  for (uint32_t t = 0; t < n; ++t)
    for (uint32_t layer = 0; layer < l.n_layer; ++layer)
      for (uint32_t head = 0; head < l.n_head_kv; ++head) {
        for (auto& x : k) x = d(rng);
        for (auto& x : v) x = d(rng);
        pool.write_token(*h, t, layer, head, k.data(), v.data());
      }
  EXPECT_TRUE(pool.set_length(*h, n).has_value());
  return *h;
}

}  // namespace fw::test
