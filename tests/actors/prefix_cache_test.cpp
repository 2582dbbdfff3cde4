// The prefix cache: the pure bookkeeping (block-aligned longest match, collisions never match,
// LRU eviction under a block cap, entries that add nothing handed back), then on real CAF actors:
// a request that repeats an earlier prompt, or extends it as a chat's next turn does (the
// previous answer included: finished sequences hand their KV to the cache), prefills only the new part and generates exactly what it generates without the cache; a pool too small
// for both the cache and a new request evicts the cache instead of making the request wait; the
// cache's blocks are the only ones left in use (requests hold none).
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <numeric>
#include <thread>

#include "actors/engine.hpp"
#include "runtime/device/cpu/cpu_backend.hpp"
#include "runtime/kv/prefix_cache.hpp"
#include "runtime/setup/runtime_parts.hpp"
#include "runtime/step/generator.hpp"
#include "tests/support/engine_fixture.hpp"
#include "tests/support/sampling_presets.hpp"
#include "tests/support/test_models.hpp"

namespace fw {
namespace {

using namespace std::chrono_literals;

kv_handle handle(uint32_t epoch, uint32_t tokens, uint32_t bt = 4) {
  kv_handle h;
  h.pool_id = 1, h.epoch = epoch, h.n_tokens = tokens;
  for (uint32_t b = 0; b < (tokens + bt - 1) / bt; ++b) h.blocks.push_back(epoch * 100 + b);
  return h;
}

std::vector<int32_t> seq(int from, int n) {
  std::vector<int32_t> v(n);
  std::iota(v.begin(), v.end(), from);
  return v;
}

TEST(prefix_cache, the_longest_whole_block_prefix_matches_and_only_equal_tokens_do) {
  prefix_cache c(4, 100);
  const auto a = seq(0, 12);
  EXPECT_TRUE(c.insert(a, handle(1, 12), 1).empty());
  EXPECT_EQ(c.stats().blocks, 3u);
  // A prompt sharing 9 tokens matches the two whole blocks (8 tokens) of them.
  auto p = seq(0, 9);
  p.push_back(77);
  auto m = c.lookup(p, 2);
  EXPECT_EQ(m.tokens, 8u);
  ASSERT_NE(m.kv, nullptr);
  EXPECT_EQ(m.kv->epoch, 1u);
  // Longer than the entry: at most the entry.
  EXPECT_EQ(c.lookup(seq(0, 40), 3).tokens, 12u);
  // Fewer than a block in common, or a different first block: a miss.
  EXPECT_EQ(c.lookup(seq(0, 3), 4).tokens, 0u);
  auto q = seq(0, 12);
  q[1] = 999;
  EXPECT_EQ(c.lookup(q, 5).tokens, 0u);
  EXPECT_EQ(c.stats().queries, 4u);
  EXPECT_EQ(c.stats().hits, 2u);
  EXPECT_EQ(c.stats().hit_tokens, 20u);
  EXPECT_EQ(c.find(seq(0, 12)).tokens, 12u);
  EXPECT_EQ(c.stats().queries, 4u);  // find() counts nothing
}

TEST(prefix_cache, entries_that_add_nothing_come_back_and_prefixes_of_a_new_entry_go) {
  prefix_cache c(4, 100);
  EXPECT_TRUE(c.insert(seq(0, 8), handle(1, 8), 1).empty());
  // Already covered: the new handle is handed back for release.
  auto back = c.insert(seq(0, 8), handle(2, 8), 2);
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].epoch, 2u);
  // Not whole blocks, or more than the cap: handed back.
  EXPECT_EQ(c.insert(seq(50, 6), handle(3, 6), 3).size(), 1u);
  prefix_cache small(4, 2);
  EXPECT_EQ(small.insert(seq(0, 12), handle(4, 12), 1).size(), 1u);
  // A longer entry starting with an existing one replaces it (the old handle comes back).
  back = c.insert(seq(0, 16), handle(5, 16), 4);
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].epoch, 1u);
  EXPECT_EQ(c.stats().entries, 1u);
  EXPECT_EQ(c.stats().blocks, 4u);
  EXPECT_EQ(c.lookup(seq(0, 8), 5).kv->epoch, 5u);
}

TEST(prefix_cache, the_least_recently_used_entry_makes_room) {
  prefix_cache c(4, 4);
  EXPECT_TRUE(c.insert(seq(0, 8), handle(1, 8), 1).empty());
  EXPECT_TRUE(c.insert(seq(100, 8), handle(2, 8), 2).empty());
  EXPECT_EQ(c.lookup(seq(0, 8), 3).tokens, 8u);  // entry 1 is now the most recent
  auto out = c.insert(seq(200, 8), handle(3, 8), 4);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].epoch, 2u);
  EXPECT_EQ(c.stats().evictions, 1u);
  EXPECT_EQ(c.lookup(seq(100, 8), 5).tokens, 0u);
  EXPECT_EQ(c.lookup(seq(0, 8), 6).tokens, 8u);
  auto all = c.evict_all();
  EXPECT_EQ(all.size(), 2u);
  EXPECT_EQ(c.stats().blocks, 0u);
  EXPECT_EQ(c.lookup(seq(0, 8), 7).tokens, 0u);
}

// -- on the actor runtime --

class prefix_cache_engine_test : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    tiny_model_spec spec;
    spec.weight_type = ggml_type::q8_0;
    spec.seed = 23;
    model_ = test::load_tiny(spec, "prefix_cache_q8_0");
  }
  static void TearDownTestSuite() { model_.reset(); }

  std::unique_ptr<actors::engine> start(uint32_t kv_tokens, uint32_t cache_blocks) {
    engine_limits lim;
    lim.n_ctx = 256;
    lim.prefill_chunk = 16;
    lim.prefix_cache_blocks = cache_blocks;
    return test::start_engine(model_, test::tiny_device(*model_, kv_tokens), lim);
  }
  /// The greedy answer; `cached`: the final event's prompt tokens served by the prefix cache.
  static std::vector<int32_t> run(actors::engine& e, std::vector<int32_t> prompt, int n, uint32_t* cached = nullptr) {
    auto done = std::make_shared<std::promise<std::vector<int32_t>>>();
    auto got = std::make_shared<std::vector<int32_t>>();
    auto hit = std::make_shared<uint32_t>(0);
    auto fut = done->get_future();
    e.submit(std::move(prompt), test::greedy(n), [done, got, hit](const actors::stream_event& ev) {
      if (ev.kind == static_cast<uint8_t>(actors::stream_kind::token)) {
        got->insert(got->end(), ev.tokens.begin(), ev.tokens.end());
      } else {
        *hit = ev.cached_tokens;
        done->set_value(*got);
      }
    });
    EXPECT_EQ(fut.wait_for(60s), std::future_status::ready);
    auto out = fut.get();
    if (cached) *cached = *hit;
    return out;
  }
  /// The scheduler's books once a request's final event has arrived. No waiting is needed: the
  /// decode worker sends "finished" (with the KV) to the scheduler before it sends the step's
  /// events on to the client, so the scheduler has it queued before this stats request.
  static actors::scheduler_stats settled(actors::engine& e) {
    auto s = e.stats();
    EXPECT_TRUE(s) << (s ? "" : s.err().what());
    EXPECT_EQ(s->decoding + s->prefilling + s->waiting, 0u);
    return s ? *s : actors::scheduler_stats{};
  }
  static std::vector<int32_t> prompt(int from, int n) {
    std::vector<int32_t> p;
    for (int i = 0; i < n; ++i) p.push_back(3 + (from + i * 7) % 250);
    return p;
  }
  static inline std::shared_ptr<const model> model_;
};

TEST_F(prefix_cache_engine_test, repeated_and_extended_prompts_reuse_blocks_and_generate_the_same) {
  auto plain = start(2048, 0);
  auto cached = start(2048, 32);
  ASSERT_TRUE(plain && cached);
  const auto turn1 = prompt(1, 50);  // 49 history tokens: 3 whole blocks
  uint32_t hit = 99;
  const auto want1 = run(*plain, turn1, 12, &hit);
  EXPECT_EQ(hit, 0u);
  EXPECT_EQ(run(*cached, turn1, 12, &hit), want1);
  EXPECT_EQ(hit, 0u) << "a first prompt is computed";
  auto s = settled(*cached);
  EXPECT_EQ(s.prefix_cache_hits, 0u);
  EXPECT_EQ(s.prefix_cache_blocks, 3u);
  // Another prompt in between writes over the pool's free blocks, so a hit below cannot pass by
  // finding the same KV left behind in a reused block: it must come from the cache's copy.
  run(*cached, prompt(200, 50), 12);
  // The same prompt again: all 48 whole-block tokens come from the cache, and its usage says so.
  EXPECT_EQ(run(*cached, turn1, 12, &hit), want1);
  EXPECT_EQ(hit, 48u);
  s = settled(*cached);
  EXPECT_EQ(s.prefix_cache_hits, 1u);
  EXPECT_EQ(s.prefix_cache_hit_tokens, 48u);
  // A chat's next turn: the conversation so far plus the reply and a new message.
  auto turn2 = turn1;
  turn2.insert(turn2.end(), want1.begin(), want1.end());
  const auto more = prompt(9, 20);
  turn2.insert(turn2.end(), more.begin(), more.end());
  const auto want2 = run(*plain, turn2, 12);
  EXPECT_EQ(run(*cached, turn2, 12), want2);
  s = settled(*cached);
  EXPECT_EQ(s.prefix_cache_hits, 2u);
  EXPECT_EQ(s.prefix_cache_hit_tokens, 96u);
  EXPECT_EQ(s.kv_used_blocks, 0u);  // in use: the cache's blocks only, nothing leaked
  EXPECT_GT(s.prefix_cache_blocks, 3u);
  auto p = settled(*plain);
  EXPECT_EQ(p.kv_used_blocks, 0u);
  EXPECT_EQ(p.prefix_cache_queries, 0u);
}

TEST_F(prefix_cache_engine_test, a_finished_answer_is_cached_too_so_the_next_turn_reuses_it) {
  auto plain = start(2048, 0);
  auto cached = start(2048, 32);
  ASSERT_TRUE(plain && cached);
  const auto turn1 = prompt(5, 50);
  const auto answer = run(*cached, turn1, 40);  // 50 + 40 tokens; 89 in the KV: 5 whole blocks
  EXPECT_EQ(answer, run(*plain, turn1, 40));
  auto s = settled(*cached);
  EXPECT_EQ(s.prefix_cache_blocks, 5u);  // the prompt's 3 blocks grew into the answer's 5
  auto turn2 = turn1;
  turn2.insert(turn2.end(), answer.begin(), answer.end());
  const auto more = prompt(11, 10);
  turn2.insert(turn2.end(), more.begin(), more.end());
  EXPECT_EQ(run(*cached, turn2, 8), run(*plain, turn2, 8));
  s = settled(*cached);
  EXPECT_EQ(s.prefix_cache_hits, 1u);
  EXPECT_EQ(s.prefix_cache_hit_tokens, 80u);  // 48 of them the prompt, 32 the answer
  EXPECT_EQ(s.kv_used_blocks, 0u);
}

TEST_F(prefix_cache_engine_test, a_request_that_needs_the_cached_blocks_evicts_them_instead_of_waiting) {
  // 16 blocks in all; the first request holds 7 and the cache copies 6 of them after its prefill;
  // the second needs 12 while only 10 are free once the first is done.
  auto e = start(256, 6);
  ASSERT_TRUE(e);
  const auto first = prompt(3, 97);  // 96 history tokens: 6 whole blocks cached after prefill
  EXPECT_EQ(run(*e, first, 4).size(), 4u);
  auto s = settled(*e);
  EXPECT_EQ(s.prefix_cache_blocks, 6u);
  const auto other = prompt(40, 180);  // 180 + 4 tokens: 12 blocks
  EXPECT_EQ(run(*e, other, 4).size(), 4u);
  s = settled(*e);
  EXPECT_EQ(s.completed, 2u);
  EXPECT_EQ(s.kv_used_blocks, 0u);
}

TEST(prefix_cache_config, prefix_cache_share_sizes_the_cache_and_zero_turns_it_off) {
  tiny_model_spec spec;
  spec.seed = 29;
  ASSERT_TRUE(test::load_tiny(spec, "prefix_cache_config"));
  const std::string path = test::temp_dir() + "/prefix_cache_config.gguf";
  auto limits_for = [&](const std::string& share) {
    auto cfg = config::from_string("[model]\npath = \"" + path + "\"\nctx_size = 128\n[compute]\nthreads = 1\n"
                                   "[kv_cache]\nblock_tokens = 16\npool_tokens = 1024\nprefix_cache_share = " + share + "\n",
                                   "share.toml");
    EXPECT_TRUE(cfg) << (cfg ? "" : cfg.err().message);
    auto parts = build_runtime(*cfg);
    EXPECT_TRUE(parts) << (parts ? "" : parts.err().what());
    return parts ? parts->limits().prefix_cache_blocks : 999u;
  };
  EXPECT_EQ(limits_for("0"), 0u);     // off
  EXPECT_EQ(limits_for("0.5"), 32u);  // half of the 64 blocks
  auto bad = config::from_string("[kv_cache]\nprefix_cache_share = 1.5\n", "bad.toml");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.err().message.find("prefix_cache_share"), std::string::npos) << bad.err().message;
}

}  // namespace
}  // namespace fw
