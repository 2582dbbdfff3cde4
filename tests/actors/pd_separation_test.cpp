// Prefill/decode separation on real CAF actors and a tiny model: the same concurrent greedy
// requests give identical tokens co-located (first come, first served), logical (decode priority,
// small prefill chunks) and physical (a prefill device and a decode device, each with its own
// thread and KV pool, the KV moved through kv_codec); a corrupted or truncated KV stream is
// refused and the prompt recomputed on the decode device; a prefill device that stalls past the
// deadline fails its request over to the decode device, which completes it; sequences offloaded
// mid-generation to a third device continue with identical tokens (and stay where they are when
// the move's stream is refused); the prefix cache works across the pair; every pool ends empty.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <mutex>
#include <optional>
#include <thread>

#include "actors/engine.hpp"
#include "runtime/supervise/telemetry_trace.hpp"
#include "runtime/device/cpu/cpu_backend.hpp"
#include "tests/support/engine_fixture.hpp"
#include "tests/support/sampling_presets.hpp"
#include "tests/support/test_models.hpp"

namespace fw::actors {
namespace {

using namespace std::chrono_literals;

enum class mode { co_located, logical, shortest, physical, offload };

class pd_separation_test : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    tiny_model_spec spec;
    spec.weight_type = ggml_type::q8_0;
    spec.seed = 31;
    model_ = test::load_tiny(spec, "pd_q8_0");
  }
  static void TearDownTestSuite() { model_.reset(); }

  static std::unique_ptr<backend> device(int threads, bool decode_priority, uint32_t kv_tokens = 4096,
                                         kv_dtype dt = kv_dtype::f32) {
    return test::tiny_device(*model_, kv_tokens, threads, decode_priority, dt);
  }

  struct setup {
    mode m = mode::physical;
    uint32_t cache_blocks = 0;
    double deadline_s = 3.0;
    kv_wire wire = kv_wire::f32;
    std::optional<kv_wire> degraded_wire;  ///< the KV wire while link-degraded; unset: wire
    std::shared_ptr<const engine_faults> faults;
    std::optional<rollout_limits> rollout;
    double offload_free_share = 1.0;  ///< offload mode: move for memory below this free share
    double offload_step_s = 0;        ///< offload mode: move while the predicted step exceeds this
  };

  static std::unique_ptr<engine> start(const setup& s) {
    engine_limits lim;
    // The drills are the only telemetry: a host with CPU sensors must not add its own readings
    // every second (they would re-judge the devices between the drill's samples).
    lim.telemetry_poll_s = 0;
    lim.n_ctx = 256;
    lim.prefill_chunk = s.m == mode::co_located ? 4096 : 16;
    lim.prefix_cache_blocks = s.cache_blocks;
    lim.prefill_deadline_s = s.deadline_s;
    lim.kv_transfer = s.wire;
    lim.degraded_kv_transfer = s.degraded_wire;
    lim.rollout = s.rollout;
    lim.prefill_shortest_first = s.m == mode::shortest;  // slices of prefill_chunk (16) tokens
    engine_options o;
    o.faults = s.faults;
    if (s.m == mode::offload) {
      // The scheduler chooses long tails from the decode worker's step reports and asks for them
      // a mailbox hop later; on this tiny model a step takes well under a millisecond, so the
      // steps are paced (2 ms) to leave the hand-over time to arrive before a 24-token answer ends
      // (a real long tail has hundreds of tokens left). What is asked for and missed is counted.
      auto paced = std::make_shared<engine_faults>(s.faults ? *s.faults : engine_faults{});
      paced->before_decode_step = [] {
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        return false;
      };
      o.faults = paced;
    }
    device_set devs;
    if (s.m == mode::physical) {
      devs.add("decode", device_role::decode, device(1, true, 4096));
      devs.add("prefill", device_role::prefill, device(1, true, 2048));
    } else {
      devs.add("both", device_role::both, device(2, s.m != mode::co_located));  // logical, shortest
    }
    if (s.m == mode::offload) {
      devs.add("offload", device_role::offload, device(1, true, 4096));
      lim.offload.min_generated = 6;  // every sequence of these tests is a long tail
      lim.offload.max_free_share = s.offload_free_share;
      lim.offload.max_step_s = s.offload_step_s;
    }
    return test::start_engine(model_, std::move(devs), lim, std::move(o));
  }

  /// prompt_of(0 .. n-1).
  static std::vector<std::vector<int32_t>> first_prompts(size_t n) {
    std::vector<std::vector<int32_t>> p;
    for (size_t i = 0; i < n; ++i) p.push_back(prompt_of(i));
    return p;
  }

  /// Faults under which the prefill device's first job hangs until `released` is ready.
  static std::shared_ptr<engine_faults> stall_first_prefill(std::shared_future<void> released) {
    auto faults = std::make_shared<engine_faults>();
    auto first = std::make_shared<std::atomic<bool>>(true);
    faults->stall_prefill = [first, released](uint64_t) {
      if (first->exchange(false)) released.wait();
    };
    return faults;
  }

  static std::vector<int32_t> prompt_of(size_t i) {
    std::vector<int32_t> p;
    for (size_t j = 0; j < 5 + i * 23; ++j) p.push_back(static_cast<int32_t>(3 + (i * 31 + j * 7) % 250));
    return p;
  }

  /// Submits every prompt at once; the tokens of each, in order.
  static std::vector<std::vector<int32_t>> run_all(engine& e, const std::vector<std::vector<int32_t>>& prompts, int n) {
    std::vector<std::shared_ptr<std::promise<completed_request>>> done;
    std::vector<std::future<completed_request>> futs;
    for (const auto& p : prompts) {
      auto pr = std::make_shared<std::promise<completed_request>>();
      auto acc = std::make_shared<completed_request>();
      futs.push_back(pr->get_future());
      e.submit(p, test::greedy(n), [pr, acc](const stream_event& ev) {
        if (ev.kind == static_cast<uint8_t>(stream_kind::token)) {
          acc->tokens.insert(acc->tokens.end(), ev.tokens.begin(), ev.tokens.end());
        } else {
          acc->final = ev;
          pr->set_value(*acc);
        }
      });
      done.push_back(pr);
    }
    std::vector<std::vector<int32_t>> out;
    for (auto& f : futs) {
      EXPECT_EQ(f.wait_for(120s), std::future_status::ready);
      auto r = f.get();
      EXPECT_TRUE(r.ok()) << r.final.error;
      out.push_back(r.tokens);
    }
    return out;
  }

  /// What a plain one-device engine (logical) generates for the prompts: the reference.
  static std::vector<std::vector<int32_t>> reference(const std::vector<std::vector<int32_t>>& prompts, int n) {
    setup plain;
    plain.m = mode::logical;
    auto ref = start(plain);
    EXPECT_TRUE(ref);
    return ref ? run_all(*ref, prompts, n) : std::vector<std::vector<int32_t>>{};
  }

  /// Both pools hold nothing but cached prefixes once every request has ended (the decode worker
  /// reports a finished sequence to the scheduler before its final event reaches the client).
  static void expect_pools_empty(engine& e, uint32_t cache_blocks = 0) {
    auto s = e.stats();
    ASSERT_TRUE(s) << s.err().what();
    EXPECT_EQ(s->waiting + s->prefilling + s->decoding, 0u);
    EXPECT_EQ(s->kv_used_blocks, 0u);
    EXPECT_EQ(s->prefill_kv_used_blocks, 0u);
    EXPECT_LE(s->prefix_cache_blocks, cache_blocks);
    // The cache lives on the prefill pool (the one pool when co-located).
    EXPECT_EQ(e.prefill_device().kv_pool().used_blocks(), s->prefix_cache_blocks);
    if (&e.device() != &e.prefill_device()) {
      EXPECT_EQ(e.device().kv_pool().used_blocks(), 0u);
    }
    if (e.offload_device()) {
      EXPECT_EQ(e.offload_device()->kv_pool().used_blocks(), 0u);
    }
  }

  static inline std::shared_ptr<const model> model_;
};

TEST_F(pd_separation_test, greedy_output_is_identical_co_located_logical_and_physical) {
  std::vector<std::vector<int32_t>> prompts;
  for (size_t i = 0; i < 8; ++i) prompts.push_back(prompt_of(i));
  std::vector<std::vector<int32_t>> want;
  for (mode m : {mode::co_located, mode::logical, mode::shortest, mode::physical, mode::offload}) {
    setup s;
    s.m = m;
    auto e = start(s);
    ASSERT_TRUE(e);
    auto got = run_all(*e, prompts, 24);
    if (want.empty()) {
      want = got;
      for (const auto& t : want) EXPECT_EQ(t.size(), 24u);
    } else {
      EXPECT_EQ(got, want) << "mode " << static_cast<int>(m);
    }
    auto st = e->stats();
    ASSERT_TRUE(st);
    if (m == mode::physical) {
      EXPECT_TRUE(st->physical);
      EXPECT_EQ(st->kv_transfers + st->routed_co_located, prompts.size());
      EXPECT_GT(st->kv_transfers, 0u);
      EXPECT_GT(st->kv_transfer_bytes, 0u);
      EXPECT_EQ(st->kv_transfer_refused, 0u);
      const std::string metrics = e->render_metrics();
      EXPECT_NE(metrics.find("flywheel:kv_transfers_total"), std::string::npos);
      EXPECT_NE(metrics.find("flywheel:device_queue_depth{"), std::string::npos);
    } else {
      EXPECT_FALSE(st->physical);
    }
    if (m == mode::offload) {
      // The scheduler asked for every sequence once it had generated 6 tokens (one per step); each
      // moved and finished there, unless it finished before the hand-over reached its worker.
      EXPECT_TRUE(st->offload_device);
      EXPECT_EQ(st->offload_asked, prompts.size());
      EXPECT_EQ(st->offloaded + st->offload_missed, st->offload_asked);
      EXPECT_GT(st->offloaded, 0u);
      EXPECT_EQ(st->offload_active, 0u);
      EXPECT_NE(e->render_metrics().find("flywheel:offloaded_sequences_total"), std::string::npos);
    }
    expect_pools_empty(*e);
  }
}

TEST_F(pd_separation_test, a_short_prompt_behind_a_long_one_answers_first_when_prefills_go_shortest_first) {
  // A 230-token prompt, then a 5-token one right behind it. FIFO (logical): the short prompt
  // waits for the long one's whole prefill (on this tiny model that is too quick to time). Shortest
  // first: it waits for one 16-token slice and streams its first token while the long prompt is
  // still prefilling.
  std::vector<int32_t> long_prompt;
  for (int32_t j = 0; j < 230; ++j) long_prompt.push_back(3 + (j * 13) % 250);
  const std::vector<int32_t> short_prompt = {5, 9, 11, 7, 3};
  for (mode m : {mode::logical, mode::shortest}) {
    setup s;
    s.m = m;
    auto e = start(s);
    ASSERT_TRUE(e);
    std::mutex mu;
    std::vector<int> first_token_order;  // 0: the long request, 1: the short one
    std::vector<std::promise<void>> done(2);
    for (int which : {0, 1}) {
      auto seen = std::make_shared<bool>(false);
      e->submit(which == 0 ? long_prompt : short_prompt, test::greedy(4),
                [&, which, seen](const stream_event& ev) {
                  if (ev.kind == static_cast<uint8_t>(stream_kind::token)) {
                    std::lock_guard<std::mutex> lock(mu);
                    if (!std::exchange(*seen, true)) first_token_order.push_back(which);
                  } else {
                    EXPECT_TRUE(ev.error.empty()) << ev.error;
                    done[which].set_value();
                  }
                });
    }
    for (auto& d : done) ASSERT_EQ(d.get_future().wait_for(60s), std::future_status::ready);
    ASSERT_EQ(first_token_order.size(), 2u);
    auto st = e->stats();
    ASSERT_TRUE(st);
    if (m == mode::logical) {
      EXPECT_EQ(st->prefill_slices, 0u) << "FIFO: whole prompts, none reordered";
      EXPECT_EQ(st->prefill_reordered, 0u);
    } else {
      EXPECT_EQ(first_token_order.front(), 1) << "shortest first: the short request answers first";
      EXPECT_GE(st->prefill_reordered, 1u);
      EXPECT_GE(st->prefill_slices, 230u / 16 + 1);
    }
    expect_pools_empty(*e);
  }
}

TEST_F(pd_separation_test, rollout_stages_below_four_use_neither_the_prefill_device_nor_offload) {
  const auto prompts = first_prompts(6);
  const auto want = reference(prompts, 24);
  // Runs the prompts on a pair or an offload engine under rollout r; its stats afterwards.
  auto serve = [&](mode m, const rollout_limits& r) {
    setup s;
    s.m = m;
    s.rollout = r;
    auto e = start(s);
    EXPECT_TRUE(e);
    if (!e) return scheduler_stats{};
    EXPECT_EQ(run_all(*e, prompts, 24), want) << "mode " << static_cast<int>(m) << ", stage " << r.start_stage;
    auto st = e->stats();
    EXPECT_TRUE(st);
    expect_pools_empty(*e);
    return st ? *st : scheduler_stats{};
  };
  rollout_limits r;
  r.start_stage = 3;  // stage 3 rolling out: its requests and stage 2's, none on stage 4
  r.min_requests = 1000;
  for (mode m : {mode::physical, mode::offload}) {
    const scheduler_stats st = serve(m, r);
    EXPECT_EQ(st.rollout_stage, 3u);
    EXPECT_EQ(st.kv_transfers, 0u);
    EXPECT_EQ(st.offloaded, 0u);
    if (m == mode::physical) {
      EXPECT_EQ(st.routed_co_located, prompts.size());
      EXPECT_NE(st.last_route_reason.find("rollout: stage"), std::string::npos) << st.last_route_reason;
    }
  }
  // Stage 4 with its whole share: the pair and the offload device serve again.
  r.start_stage = 4;
  r.shares[3] = 1.0;
  EXPECT_GT(serve(mode::physical, r).kv_transfers, 0u);
  const scheduler_stats off = serve(mode::offload, r);
  EXPECT_EQ(off.offload_asked, prompts.size());
  EXPECT_EQ(off.offloaded + off.offload_missed, off.offload_asked);
  EXPECT_GT(off.offloaded, 0u);
}

TEST_F(pd_separation_test, compressed_transfers_report_their_ratio) {
  std::vector<std::vector<int32_t>> prompts = {prompt_of(3), prompt_of(5)};
  setup s;
  s.wire = kv_wire::int8;
  auto e = start(s);
  ASSERT_TRUE(e);
  auto got = run_all(*e, prompts, 8);
  auto st = e->stats();
  ASSERT_TRUE(st);
  ASSERT_EQ(st->kv_transfers, 2u);
  const double ratio = static_cast<double>(st->kv_transfer_bytes) / st->kv_transfer_f32_bytes;
  EXPECT_GT(ratio, 0.25);
  EXPECT_LT(ratio, 0.35);  // int8 rows plus a scale per row
  expect_pools_empty(*e);
}

TEST_F(pd_separation_test, a_corrupted_or_truncated_stream_is_refused_and_the_prompt_recomputed) {
  std::vector<std::vector<int32_t>> prompts;
  for (size_t i = 0; i < 4; ++i) prompts.push_back(prompt_of(i + 1));
  const auto want = reference(prompts, 16);

  auto faults = std::make_shared<engine_faults>();
  std::mutex m;
  std::vector<uint64_t> damaged;
  faults->damage_kv_stream = [&](uint64_t id, std::vector<std::byte>& bytes) {
    std::lock_guard l(m);
    if (damaged.size() >= 2) return;
    if (damaged.empty()) bytes[bytes.size() / 2] ^= std::byte{0x10};  // one flipped bit
    else bytes.resize(bytes.size() - 7);                               // a cut stream
    damaged.push_back(id);
  };
  setup s;
  s.faults = faults;
  auto e = start(s);
  ASSERT_TRUE(e);
  EXPECT_EQ(run_all(*e, prompts, 16), want);
  auto st = e->stats();
  ASSERT_TRUE(st);
  EXPECT_EQ(damaged.size(), 2u);
  EXPECT_EQ(st->kv_transfer_refused, 2u);
  EXPECT_EQ(st->failed, 0u);
  expect_pools_empty(*e);
}

TEST_F(pd_separation_test, a_prefill_device_stalled_past_the_deadline_fails_over_and_the_request_completes) {
  const auto p = prompt_of(4);
  const auto want = reference({p, prompt_of(2)}, 12);

  // The first job on the prefill device hangs until the test lets it go.
  auto release = std::make_shared<std::promise<void>>();
  auto faults = stall_first_prefill(release->get_future().share());
  setup s;
  s.faults = faults;
  s.deadline_s = 0.2;
  auto e = start(s);
  ASSERT_TRUE(e);
  EXPECT_EQ(run_all(*e, {p}, 12).front(), want[0]);  // completed while the prefill device hangs
  auto st = e->stats();
  ASSERT_TRUE(st);
  EXPECT_EQ(st->prefill_failovers, 1u);
  EXPECT_EQ(st->prefill_queue, 0u);  // the hung job no longer counts against the device
  release->set_value();
  // A later request on the recovered device: its job runs after the hung one replied, so the
  // superseded KV has been released by the time it completes.
  EXPECT_EQ(run_all(*e, {prompt_of(2)}, 12).front(), want[1]);
  st = e->stats();
  ASSERT_TRUE(st);
  EXPECT_EQ(st->kv_transfers, 1u);
  EXPECT_EQ(st->failed, 0u);
  expect_pools_empty(*e);
}

TEST_F(pd_separation_test, a_refused_offload_stream_leaves_the_sequence_decoding_where_it_was) {
  std::vector<std::vector<int32_t>> prompts = {prompt_of(1), prompt_of(2), prompt_of(3)};
  const auto want = reference(prompts, 30);
  auto faults = std::make_shared<engine_faults>();
  auto damaged = std::make_shared<std::atomic<int>>(0);
  faults->damage_kv_stream = [damaged](uint64_t, std::vector<std::byte>& bytes) {
    if (damaged->fetch_add(1) == 0) bytes[bytes.size() - 3] ^= std::byte{0x40};
  };
  setup s;
  s.m = mode::offload;
  s.faults = faults;
  auto e = start(s);
  ASSERT_TRUE(e);
  EXPECT_EQ(run_all(*e, prompts, 30), want);
  auto st = e->stats();
  ASSERT_TRUE(st);
  EXPECT_EQ(st->offload_refused, 1u);
  // Every hand-over asked for moved, was refused (and the sequence kept decoding, to be asked
  // again later) or missed a sequence that had finished.
  EXPECT_GE(st->offload_asked, prompts.size());
  EXPECT_EQ(st->offloaded + st->offload_refused + st->offload_missed, st->offload_asked);
  EXPECT_GT(st->offloaded, 0u);
  EXPECT_EQ(st->failed, 0u);
  expect_pools_empty(*e);
}

TEST_F(pd_separation_test, sequences_move_for_time_when_the_predicted_decode_step_exceeds_the_target) {
  // No memory pressure ever (free share 0): only the decode-time predictor can move them. With a
  // target no step meets, every long tail moves once the fit has seen steps; without one, none.
  const auto prompts = first_prompts(3);
  const auto want = reference(prompts, 30);
  for (double target : {1e-9, 0.0}) {
    setup s;
    s.m = mode::offload;
    s.offload_free_share = 0;
    s.offload_step_s = target;
    auto e = start(s);
    ASSERT_TRUE(e);
    EXPECT_EQ(run_all(*e, prompts, 30), want) << "target " << target;
    auto st = e->stats();
    ASSERT_TRUE(st);
    if (target > 0) {
      EXPECT_EQ(st->offload_asked, prompts.size());
      EXPECT_EQ(st->offloaded + st->offload_missed, st->offload_asked);
      EXPECT_GT(st->offloaded, 0u);
    } else {
      EXPECT_EQ(st->offload_asked, 0u);
      EXPECT_EQ(st->offloaded, 0u);
    }
    EXPECT_EQ(st->failed, 0u);
    expect_pools_empty(*e);
  }
}

TEST_F(pd_separation_test, the_prefix_cache_serves_the_pair_from_the_prefill_pool) {
  auto p = prompt_of(6);  // 143 tokens: 8 whole blocks
  auto longer = p;
  for (int i = 0; i < 20; ++i) longer.push_back(5 + i);
  const auto want = reference({p}, 10);
  const auto want_longer = reference({longer}, 10);
  setup s;
  s.cache_blocks = 32;
  auto e = start(s);
  ASSERT_TRUE(e);
  EXPECT_EQ(run_all(*e, {p}, 10), want);
  EXPECT_EQ(run_all(*e, {longer}, 10), want_longer);
  auto st = e->stats();
  ASSERT_TRUE(st);
  EXPECT_EQ(st->prefix_cache_hits, 1u);
  EXPECT_EQ(st->prefix_cache_hit_tokens, 128u);
  expect_pools_empty(*e, 32);
}

}  // namespace
}  // namespace fw::actors

namespace fw::actors {
namespace {

/// Polls the supervisor until the degradation state is `want` (bounded: 30 s).
bool wait_state(engine& e, const std::string& want) {
  for (int i = 0; i < 3000; ++i) {
    auto h = e.health();
    if (h && h->degradation == want) return true;
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

std::vector<telemetry_sample> trace(const std::string& csv) {
  auto t = parse_telemetry_trace(csv, "drill.csv");
  EXPECT_TRUE(t) << (t ? "" : t.err().what());
  return t ? *t : std::vector<telemetry_sample>{};
}

std::string ramp(int from, int to, const std::vector<double>& temp, const std::vector<double>& gbps) {
  std::string csv;
  for (int t = from; t < to; ++t)
    csv += std::to_string(t) + ",prefill,temperature_c," + std::to_string(temp[t]) + "\n" + std::to_string(t) +
           ",prefill,link_gbps," + std::to_string(gbps[t]) + "\n";
  return csv;
}

TEST_F(pd_separation_test, a_heat_ramp_drill_degrades_the_link_co_locates_and_recovers_while_requests_complete) {
  // SPEC.md's incident: the prefill device heats to 82 C and its link falls from 200 to 140 GB/s.
  // link-degraded: k capped, the KV still lossless; co-located: prompts prefill on the decode device; cooled:
  // back one step at a time. Requests run through each phase (and while the drill plays) and
  // give exactly the tokens of a healthy run; none is lost.
  const std::vector<double> temp = {60, 70, 78, 80, 82, 82, 82, 82, 70, 70, 70, 70, 70, 70};
  const std::vector<double> gbps = {200, 195, 180, 170, 160, 150, 140, 140, 200, 200, 200, 200, 200, 200};
  const auto prompts = first_prompts(6);
  const auto want = reference(prompts, 16);
  setup s;
  auto e = start(s);
  ASSERT_TRUE(e);

  ASSERT_TRUE(e->drill(trace(ramp(0, 4, temp, gbps)), 100));
  ASSERT_TRUE(wait_state(*e, "link-degraded"));
  EXPECT_EQ(run_all(*e, prompts, 16), want);
  auto st = e->stats();
  ASSERT_TRUE(st);
  EXPECT_EQ(st->routed_physical, prompts.size()) << "link-degraded still prefills on the prefill device";
  EXPECT_EQ(st->kv_transfer_bytes, st->kv_transfer_f32_bytes + 40 * prompts.size()) << "lossless f32 streams";

  // The rest of the heat plays while requests run.
  std::future<std::vector<std::vector<int32_t>>> during =
      std::async(std::launch::async, [&] { return run_all(*e, prompts, 16); });
  ASSERT_TRUE(e->drill(trace(ramp(4, 8, temp, gbps)), 100));
  EXPECT_EQ(during.get(), want);
  ASSERT_TRUE(wait_state(*e, "co-located"));
  const uint64_t co_before = e->stats()->routed_co_located;
  EXPECT_EQ(run_all(*e, prompts, 16), want);
  st = e->stats();
  ASSERT_TRUE(st);
  EXPECT_EQ(st->routed_co_located, co_before + prompts.size()) << "co-located: every prompt on the decode device";
  EXPECT_NE(st->last_route_reason.find("degraded (co-located)"), std::string::npos) << st->last_route_reason;

  ASSERT_TRUE(e->drill(trace(ramp(8, 14, temp, gbps)), 100));
  ASSERT_TRUE(wait_state(*e, "healthy"));
  st = e->stats();
  ASSERT_TRUE(st);
  const uint64_t physical_before = st->routed_physical;
  const uint64_t bytes_before = st->kv_transfer_bytes, f32_before = st->kv_transfer_f32_bytes;
  EXPECT_EQ(run_all(*e, prompts, 16), want);
  st = e->stats();
  ASSERT_TRUE(st);
  EXPECT_EQ(st->routed_physical, physical_before + prompts.size()) << "recovered: the prefill device again";
  // Healthy again: f32 streams, each the f32 size plus its 40-byte header.
  EXPECT_EQ(st->kv_transfer_bytes - bytes_before, st->kv_transfer_f32_bytes - f32_before + 40 * prompts.size());
  EXPECT_EQ(st->failed, 0u);
  auto h = e->health();
  ASSERT_TRUE(h);
  ASSERT_EQ(h->transitions.size(), 4u);
  EXPECT_NE(h->transitions[0].find("healthy -> link-degraded: prefill at 80 C"), std::string::npos) << h->transitions[0];
  EXPECT_NE(h->transitions[1].find("link-degraded -> co-located: sustained"), std::string::npos) << h->transitions[1];
  EXPECT_NE(h->transitions[2].find("co-located -> link-degraded: recovered"), std::string::npos) << h->transitions[2];
  EXPECT_NE(h->transitions[3].find("link-degraded -> healthy"), std::string::npos) << h->transitions[3];
  const std::string metrics = e->render_metrics();
  EXPECT_NE(metrics.find("flywheel:degradation_state{"), std::string::npos);
  const size_t at = metrics.find("flywheel:degradation_transitions_total{");
  ASSERT_NE(at, std::string::npos);
  EXPECT_NE(metrics.find("} 4\n", at), std::string::npos) << metrics.substr(at, 120);
  EXPECT_NE(metrics.find("flywheel:link_bandwidth_bytes_per_second{"), std::string::npos);
  expect_pools_empty(*e);
}

TEST_F(pd_separation_test, a_flapping_link_drill_holds_link_degraded_while_requests_complete) {
  // conf/drills/flapping_link.csv: 200 and 140 GB/s on alternate seconds. Hysteresis: one
  // transition to link-degraded, never co-located (no sustained run), never back to healthy
  // (never recover_samples healthy samples in a row); requests meanwhile give a healthy run's tokens.
  const auto prompts = first_prompts(6);
  const auto want = reference(prompts, 16);
  setup s;
  auto e = start(s);
  ASSERT_TRUE(e);
  auto flap = read_telemetry_trace(std::string(FW_SOURCE_DIR) + "/conf/drills/flapping_link.csv");
  ASSERT_TRUE(flap) << flap.err().what();
  const double span = flap->back().t_s - flap->front().t_s;
  std::future<std::vector<std::vector<int32_t>>> during =
      std::async(std::launch::async, [&] { return run_all(*e, prompts, 16); });
  ASSERT_TRUE(e->drill(*flap, 20));
  EXPECT_EQ(during.get(), want);
  std::this_thread::sleep_for(std::chrono::duration<double>(span / 20 + 0.3));  // the whole trace has played
  EXPECT_EQ(run_all(*e, prompts, 16), want);
  auto h = e->health();
  ASSERT_TRUE(h);
  EXPECT_EQ(h->degradation, "link-degraded");
  ASSERT_EQ(h->transitions.size(), 1u);
  EXPECT_NE(h->transitions[0].find("healthy -> link-degraded"), std::string::npos) << h->transitions[0];
  auto st = e->stats();
  ASSERT_TRUE(st);
  EXPECT_EQ(st->failed, 0u);
  EXPECT_EQ(st->routed_co_located, 0u) << "never co-located";
  expect_pools_empty(*e);
}

TEST_F(pd_separation_test, a_degraded_link_moves_kv_compressed_where_configured) {
  // [supervisor] degraded_kv_transfer = "int8": over a degraded link the streams shrink to about
  // a quarter (exactness traded for bytes, so tokens are not compared); healthy again: f32.
  std::vector<std::vector<int32_t>> prompts = {prompt_of(3), prompt_of(4)};
  setup s;
  s.degraded_wire = kv_wire::int8;
  auto e = start(s);
  ASSERT_TRUE(e);
  ASSERT_TRUE(e->drill(trace("0,prefill,temperature_c,85\n"), 1));
  ASSERT_TRUE(wait_state(*e, "link-degraded"));
  (void)run_all(*e, prompts, 8);
  auto st = e->stats();
  ASSERT_TRUE(st);
  EXPECT_EQ(st->kv_transfers, prompts.size());
  EXPECT_LT(st->kv_transfer_bytes * 3, st->kv_transfer_f32_bytes) << "int8 rows plus a scale per row";
  EXPECT_EQ(st->failed, 0u);
  expect_pools_empty(*e);
}

TEST_F(pd_separation_test, a_prefill_device_lost_mid_stream_moves_its_prompts_to_the_decode_device) {
  // The prefill device hangs on its first job (a deadline far away); a drill reports it lost:
  // cpu-fallback fails every prompt still there over to the decode device at once, and they
  // complete with the tokens of a healthy run.
  std::vector<std::vector<int32_t>> prompts = {prompt_of(1), prompt_of(2), prompt_of(3), prompt_of(4)};
  const auto want = reference(prompts, 12);
  auto release = std::make_shared<std::promise<void>>();
  auto faults = stall_first_prefill(release->get_future().share());
  setup s;
  s.faults = faults;
  s.deadline_s = 600;
  auto e = start(s);
  ASSERT_TRUE(e);
  std::future<std::vector<std::vector<int32_t>>> running =
      std::async(std::launch::async, [&] { return run_all(*e, prompts, 12); });
  for (int i = 0; i < 3000; ++i) {  // all four staged on the prefill device
    auto st = e->stats();
    if (st && st->prefill_queue == prompts.size()) break;
    std::this_thread::sleep_for(10ms);
  }
  ASSERT_EQ(e->stats()->prefill_queue, prompts.size());
  ASSERT_TRUE(e->drill(trace("0,prefill,lost,1\n"), 1));
  EXPECT_EQ(running.get(), want);
  ASSERT_TRUE(wait_state(*e, "cpu-fallback"));
  auto st = e->stats();
  ASSERT_TRUE(st);
  EXPECT_EQ(st->prefill_failovers, prompts.size());
  EXPECT_EQ(st->failed, 0u);
  release->set_value();
  // The superseded jobs still run on the prefill device once it is released; their KV goes back
  // when they reply (a bounded wait for that state).
  for (int i = 0; i < 3000 && e->prefill_device().kv_pool().used_blocks() > 0; ++i) std::this_thread::sleep_for(10ms);
  expect_pools_empty(*e);
}

}  // namespace
}  // namespace fw::actors
