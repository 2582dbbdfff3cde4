// runtime/sched/scheduler driven by fabricated events, with real KV pools and a fake clock: no
// actors, no threads, no sleeps (the model: vLLM v1's tests/v1/core, which drive the real
// scheduler with fabricated model-runner outputs). Each test walks requests through phases and
// checks the actions the scheduler returns, the stage it reports and the pools' block books.
#include "tests/runtime/sched/scheduler_fixture.hpp"

namespace fw {
namespace {

// -- co-located: the whole life and every refusal --

TEST_F(scheduler_test, a_request_goes_waiting_prefilling_decoding_done_with_its_kv_booked_once) {
  start(base_setup(), false);
  auto acts = s_->submit(request(1));
  EXPECT_TRUE(acts.empty()) << "no worker runs yet: the request waits";
  EXPECT_EQ(s_->stage_of(1), request_stage::waiting);
  (void)s_->worker_up(worker_kind::decode, false);
  auto p = one<run_prefill>(s_->worker_up(worker_kind::prefill, false));
  EXPECT_EQ(p.worker, worker_kind::prefill);
  EXPECT_EQ(p.generation, s_->generation(worker_kind::prefill));
  EXPECT_EQ(p.job.tokens, std::vector<int32_t>({1, 2, 3, 4, 5})) << "the last prompt token is the first decode input";
  EXPECT_EQ(s_->stage_of(1), request_stage::prefilling);
  EXPECT_EQ(decode_->used_blocks(), 4u) << "worst case: 6 prompt + 8 generated tokens in blocks of 4";

  auto d = one<run_decode>(s_->prefill_finished(worker_kind::prefill, prefilled(p))).job;
  EXPECT_EQ(d.id, 1u);
  EXPECT_EQ(d.history, request(1).prompt);
  EXPECT_EQ(d.budget, 8u);
  EXPECT_EQ(d.kv.n_tokens, 5u);
  EXPECT_FLOAT_EQ(d.attention_entropy, 1.5f);
  EXPECT_EQ(s_->stage_of(1), request_stage::decoding);

  EXPECT_TRUE(finish(d).empty());
  EXPECT_EQ(s_->stage_of(1), request_stage::unknown);
  EXPECT_EQ(decode_->used_blocks(), 0u);
  const auto st = s_->stats();
  EXPECT_EQ(st.completed, 1u);
  EXPECT_EQ(st.failed, 0u);
  EXPECT_EQ(st.prefill_chunks, 1u);
  EXPECT_EQ(st.prefill_chunk_rows, 5u);
}

TEST_F(scheduler_test, bad_requests_are_refused_with_their_kind_before_they_take_anything) {
  start(base_setup());
  auto bad_token = request(1);
  bad_token.prompt[2] = 5000;
  EXPECT_EQ(one<fail_request>(s_->submit(bad_token)).e.code, errc::invalid_argument);
  EXPECT_EQ(one<fail_request>(s_->submit(request(2, 200))).e.code, errc::context_overflow);
  auto bad_params = request(3);
  bad_params.params.top_k = -1;
  EXPECT_EQ(one<fail_request>(s_->submit(bad_params)).e.code, errc::invalid_argument);
  (void)one<run_prefill>(s_->submit(request(4)));
  auto dup = s_->submit(request(4));
  EXPECT_EQ(one<fail_request>(dup).e.code, errc::invalid_argument);
  EXPECT_EQ(one<fail_request>(dup).e.message, "duplicate request id");
  EXPECT_EQ(s_->stats().failed, 4u);
  EXPECT_EQ(s_->stage_of(4), request_stage::prefilling) << "the duplicate did not disturb the original";
}

TEST_F(scheduler_test, a_full_queue_refuses_as_overloaded_and_a_full_batch_waits_fifo) {
  start(base_setup());
  for (uint64_t id = 1; id <= 4; ++id) (void)one<run_prefill>(s_->submit(request(id)));
  for (uint64_t id = 5; id <= 12; ++id) EXPECT_TRUE(s_->submit(request(id)).empty()) << id;
  EXPECT_EQ(one<fail_request>(s_->submit(request(13))).e.code, errc::overloaded);
  EXPECT_EQ(s_->stats().waiting, 8u);
  EXPECT_EQ(s_->stage_of(5), request_stage::waiting);
}

TEST_F(scheduler_test, cancel_in_each_phase_frees_the_kv_exactly_once) {
  start(base_setup());
  // Waiting: gone at once.
  for (uint64_t id = 1; id <= 4; ++id) (void)s_->submit(request(id));
  (void)s_->submit(request(9));
  EXPECT_EQ(s_->stage_of(9), request_stage::waiting);
  EXPECT_TRUE(s_->cancel(9).empty());
  EXPECT_EQ(s_->stage_of(9), request_stage::unknown);
  // Prefilling: released when the prefill replies, never decoded.
  s_ = nullptr;
  decode_ = make_pool();
  start(base_setup());
  auto p = one<run_prefill>(s_->submit(request(1)));
  EXPECT_TRUE(s_->cancel(1).empty());
  auto acts = s_->prefill_finished(p.worker, prefilled(p));
  EXPECT_TRUE(all_of<run_decode>(acts).empty());
  EXPECT_EQ(decode_->used_blocks(), 0u);
  // Decoding: the decode worker is told (it frees the KV).
  auto d = to_decode(2);
  auto c = one<cancel_decode>(s_->cancel(2));
  EXPECT_EQ(c.worker, worker_kind::decode);
  EXPECT_EQ(c.id, 2u);
  EXPECT_EQ(s_->stage_of(2), request_stage::unknown);
  EXPECT_TRUE(s_->cancel(2).empty()) << "a second cancel finds nothing";
}

TEST_F(scheduler_test, a_prompt_that_kills_its_prefill_worker_is_retried_then_failed) {
  auto su = base_setup();
  su.request_retries = 2;
  start(std::move(su));
  auto p = one<run_prefill>(s_->submit(request(1)));
  for (int attempt = 0; attempt < 2; ++attempt) {
    const auto gen = p.generation;
    auto acts = s_->prefill_failed(1, p.worker, gen, false, make_error(errc::worker_failed, "boom"));
    EXPECT_TRUE(acts.empty()) << "the worker is down: the retry waits for its replacement";
    EXPECT_FALSE(s_->worker_running(worker_kind::prefill));
    EXPECT_EQ(s_->stage_of(1), request_stage::waiting);
    EXPECT_EQ(decode_->used_blocks(), 0u) << "the dead job's KV is released by epoch";
    p = one<run_prefill>(s_->worker_up(worker_kind::prefill, true));
    EXPECT_EQ(p.generation, gen + 1);
  }
  auto f = one<fail_request>(s_->prefill_failed(1, p.worker, p.generation, false, make_error(errc::worker_failed, "boom")));
  EXPECT_EQ(f.e.code, errc::worker_failed);
  EXPECT_NE(f.e.message.find("3 times"), std::string::npos) << f.e.message;
  EXPECT_EQ(s_->stats().worker_restarts, 2u);
}

TEST_F(scheduler_test, an_innocent_job_requeues_and_a_stale_failure_leaves_the_new_worker_alone) {
  start(base_setup());
  auto a = one<run_prefill>(s_->submit(request(1)));
  auto b = one<run_prefill>(s_->submit(request(2)));
  // Job a killed the worker; b reached the dead mailbox.
  (void)s_->prefill_failed(1, a.worker, a.generation, false, make_error(errc::worker_failed, "boom"));
  auto acts = s_->prefill_failed(2, b.worker, b.generation, true, make_error(errc::worker_failed, "receiver down"));
  EXPECT_TRUE(all_of<fail_request>(acts).empty()) << "the innocent request is not failed";
  auto retries = all_of<run_prefill>(s_->worker_up(worker_kind::prefill, true));
  ASSERT_EQ(retries.size(), 2u);
  // A late failure from the old worker's generation does not take the new one down.
  (void)s_->prefill_failed(99, worker_kind::prefill, a.generation, true, make_error(errc::worker_failed, "late"));
  EXPECT_TRUE(s_->worker_running(worker_kind::prefill));
}

TEST_F(scheduler_test, a_lost_decode_worker_costs_no_request_they_resume_from_their_tokens) {
  start(base_setup());
  auto d = to_decode(1);
  step_tokens t;
  t.ids = {1, 1};
  t.tokens = {70, 71};
  (void)s_->progress(t);
  EXPECT_EQ(decode_->used_blocks(), 4u);
  auto acts = s_->worker_lost(worker_kind::decode, "crashed");
  EXPECT_TRUE(acts.empty()) << "nothing is admitted while the decode worker is down";
  EXPECT_EQ(s_->stage_of(1), request_stage::waiting);
  EXPECT_EQ(decode_->used_blocks(), 0u) << "the dead worker's KV is released by epoch";
  auto p = one<run_prefill>(s_->worker_up(worker_kind::decode, true));
  EXPECT_EQ(p.job.tokens, std::vector<int32_t>({1, 2, 3, 4, 5, 6, 70})) << "prompt + generated, all but the last";
  auto d2 = one<run_decode>(s_->prefill_finished(p.worker, prefilled(p))).job;
  EXPECT_EQ(d2.resumed, std::vector<int32_t>({70, 71}));
  EXPECT_EQ(d2.history, request(1).prompt);
  EXPECT_EQ(s_->stats().resumed, 1u);
}

TEST_F(scheduler_test, a_decode_job_ready_while_its_worker_restarts_is_parked_then_sent_or_dropped) {
  start(base_setup());
  auto p1 = one<run_prefill>(s_->submit(request(1)));
  auto p2 = one<run_prefill>(s_->submit(request(2)));
  (void)s_->worker_lost(worker_kind::decode, "crashed");
  EXPECT_TRUE(s_->prefill_finished(p1.worker, prefilled(p1)).empty());
  EXPECT_TRUE(s_->prefill_finished(p2.worker, prefilled(p2)).empty());
  EXPECT_EQ(s_->stage_of(1), request_stage::parked);
  EXPECT_TRUE(s_->cancel(2).empty()) << "a parked job is dropped here, no worker to tell";
  EXPECT_EQ(decode_->used_blocks(), 4u) << "request 2's blocks are back";
  auto d = one<run_decode>(s_->worker_up(worker_kind::decode, true)).job;
  EXPECT_EQ(d.id, 1u);
  EXPECT_EQ(s_->stage_of(1), request_stage::decoding);
}

TEST_F(scheduler_test, a_decode_failure_reaches_the_client_with_its_kind) {
  start(base_setup());
  auto d = to_decode(1);
  sequence_failures f;
  f.ids = {1};
  f.codes = {static_cast<uint8_t>(errc::out_of_memory)};
  f.messages = {"no room"};
  f.kvs = {d.kv};  // the worker hands the failed sequence's KV back
  auto e = one<fail_request>(s_->decode_failed(f));
  EXPECT_EQ(decode_->used_blocks(), 0u) << "released by the scheduler, the pool's one owner";
  EXPECT_EQ(e.e.code, errc::out_of_memory);
  EXPECT_EQ(e.e.message, "no room");
  EXPECT_EQ(s_->stats().failed, 1u);
}

TEST_F(scheduler_test, the_timer_fails_overdue_requests_and_tells_the_decode_worker) {
  start(base_setup());
  auto d = to_decode(1);
  (void)s_->submit(request(2));
  now_ += 30;
  EXPECT_TRUE(s_->tick().empty());
  now_ += 31;
  auto acts = s_->tick();
  auto fails = all_of<fail_request>(acts);
  ASSERT_EQ(fails.size(), 2u);
  for (const auto& f : fails) EXPECT_EQ(f.e.code, errc::timed_out);
  EXPECT_EQ(one<cancel_decode>(acts).id, 1u);
}

TEST_F(scheduler_test, the_prefix_cache_serves_a_repeated_prompt_from_copied_blocks) {
  auto su = base_setup();
  su.prefix_cache_blocks = 16;
  start(std::move(su));
  auto d = to_decode(1, 13);  // 12 prefilled tokens: 3 whole blocks cached after the prefill
  EXPECT_EQ(s_->stats().prefix_cache_blocks, 3u);
  EXPECT_EQ(d.cached_tokens, 0u);
  (void)finish(d);
  auto p = one<run_prefill>(s_->submit(request(2, 14)));
  EXPECT_EQ(p.job.kv.n_tokens, 12u) << "the cached 12 tokens were copied into its own blocks";
  EXPECT_EQ(p.job.tokens, std::vector<int32_t>({13})) << "only the rest is prefilled";
  const auto st = s_->stats();
  EXPECT_EQ(st.prefix_cache_hits, 1u);
  EXPECT_EQ(st.prefix_cache_hit_tokens, 12u);
  // The decode job tells the client's usage how much of the prompt the cache served.
  EXPECT_EQ(one<run_decode>(s_->prefill_finished(p.worker, prefilled(p))).job.cached_tokens, 12u);
}

/// A scoring prefill's reply: one entry per scored row (the token after it).
prefill_done scored(const run_prefill& p) {
  prefill_done d = prefilled(p);
  for (size_t i = 0; i < p.job.tokens.size(); ++i) {
    token_logprobs t;
    t.token = i + 1 < p.job.tokens.size() ? p.job.tokens[i + 1] : p.job.next_token;
    t.logprob = -static_cast<float>(t.token);
    d.prompt_logprobs.push_back(t);
  }
  return d;
}

TEST_F(scheduler_test, a_scored_prompt_is_prefilled_whole_and_its_scores_reach_the_decode_job) {
  auto su = base_setup();
  su.prefix_cache_blocks = 16;
  start(std::move(su));
  (void)finish(to_decode(1, 13));  // 12 tokens of this prompt cached
  auto req = request(2, 13);
  req.params.prompt_logprobs = 2;
  auto p = one<run_prefill>(s_->submit(std::move(req)));
  EXPECT_EQ(p.job.kv.n_tokens, 0u) << "cached tokens have no logits: a scored prompt is computed whole";
  EXPECT_EQ(p.job.tokens.size(), 12u);
  EXPECT_EQ(p.job.prompt_logprobs, 2);
  EXPECT_EQ(p.job.next_token, 13) << "the last row scores the prompt's last token (the first decode step's input)";
  auto d = one<run_decode>(s_->prefill_finished(p.worker, scored(p))).job;
  EXPECT_EQ(d.cached_tokens, 0u);
  ASSERT_EQ(d.prompt_logprobs.size(), 12u);
  for (size_t i = 0; i < 12; ++i) EXPECT_EQ(d.prompt_logprobs[i].token, static_cast<int32_t>(i + 2)) << i;
  // A request that does not score its prompt is not asked to.
  auto plain = one<run_prefill>(s_->submit(request(3, 5, 8, 100)));
  EXPECT_EQ(plain.job.prompt_logprobs, -1);
}

TEST_F(scheduler_test, a_scored_prompt_prefills_on_the_decode_device_under_physical_separation) {
  start_physical();
  auto req = request(1);
  req.params.prompt_logprobs = 0;
  auto p = one<run_prefill>(s_->submit(std::move(req)));
  EXPECT_EQ(p.worker, worker_kind::fallback) << "the remote prefill paths return no logits";
  EXPECT_EQ(p.job.kv.pool_id, decode_->pool_id());
  EXPECT_EQ(one<run_decode>(s_->prefill_finished(p.worker, scored(p))).job.prompt_logprobs.size(), 5u);
}

TEST_F(scheduler_test, a_finished_sequence_s_whole_blocks_enter_the_prefix_cache_from_its_returned_kv) {
  auto su = base_setup();
  su.prefix_cache_blocks = 16;
  start(std::move(su));
  auto d = to_decode(1, 6);  // 5 prefilled tokens: one whole block cached at prefill
  EXPECT_EQ(s_->stats().prefix_cache_blocks, 1u);
  std::vector<int32_t> tokens = request(1, 6).prompt;
  for (int32_t t : {60, 61, 62}) tokens.push_back(t);  // prompt + 3 generated: 9 tokens, 8 in KV
  d.kv.n_tokens = 8;
  (void)finish(d, std::vector<int32_t>(tokens.begin(), tokens.begin() + 8));
  EXPECT_EQ(s_->stats().prefix_cache_blocks, 2u) << "the prompt and answer's 2 whole blocks replace the 1-block entry";
  EXPECT_EQ(decode_->used_blocks(), 2u) << "only the cached blocks are left; the rest was released";
}

TEST_F(scheduler_test, cached_prefixes_yield_their_blocks_to_a_waiting_request) {
  auto su = base_setup();
  su.prefix_cache_blocks = 64;
  decode_ = make_pool(12);
  su.decode_pool = decode_.get();
  start(std::move(su));
  auto d = to_decode(1, 13);  // 13 + 8 tokens: 6 blocks; the cache copies 3 more
  (void)finish(d);
  EXPECT_EQ(s_->stats().prefix_cache_blocks, 3u);
  EXPECT_EQ(decode_->free_blocks(), 9u);
  auto p = one<run_prefill>(s_->submit(request(2, 32, 8, 500)));  // 10 blocks: only with the cache evicted
  EXPECT_EQ(p.job.id, 2u);
  EXPECT_EQ(s_->stats().prefix_cache_blocks, 0u);
}

// -- separate prefill and decode devices --

TEST_F(scheduler_test, physical_separation_stages_prefills_moves_the_kv_then_decodes) {
  start_physical();
  auto p = one<run_prefill>(s_->submit(request(1)));
  EXPECT_EQ(p.worker, worker_kind::prefill);
  EXPECT_EQ(p.job.kv.pool_id, prefill_->pool_id());
  EXPECT_EQ(s_->stage_of(1), request_stage::staged);
  EXPECT_EQ(s_->stats().prefill_queue, 1u);
  auto t = one<run_transfer>(s_->prefill_finished(worker_kind::prefill, prefilled(p, 5)));
  EXPECT_EQ(t.job.from.pool_id, prefill_->pool_id());
  EXPECT_EQ(t.job.to.pool_id, decode_->pool_id());
  EXPECT_EQ(t.job.wire, 255);
  EXPECT_EQ(s_->stage_of(1), request_stage::transferring);
  auto d = one<run_decode>(s_->transfer_finished(transferred(t))).job;
  EXPECT_EQ(d.kv.pool_id, decode_->pool_id());
  EXPECT_EQ(d.kv.n_tokens, 5u);
  EXPECT_EQ(prefill_->used_blocks(), 0u) << "the prefill copy is released once moved";
  const auto st = s_->stats();
  EXPECT_TRUE(st.physical);
  EXPECT_EQ(st.kv_transfers, 1u);
  EXPECT_EQ(st.routed_physical, 1u);
  EXPECT_GT(st.prefill_tokens_per_s, 0);
}

TEST_F(scheduler_test, a_refused_kv_stream_is_recomputed_on_the_decode_device) {
  start_physical();
  auto p = one<run_prefill>(s_->submit(request(1)));
  auto t = one<run_transfer>(s_->prefill_finished(worker_kind::prefill, prefilled(p)));
  auto again = one<run_prefill>(s_->transfer_finished(transferred(t, "checksum mismatch")));
  EXPECT_EQ(again.worker, worker_kind::fallback);
  EXPECT_EQ(again.job.kv.pool_id, decode_->pool_id());
  EXPECT_EQ(s_->stage_of(1), request_stage::prefilling);
  (void)one<run_decode>(s_->prefill_finished(again.worker, prefilled(again)));
  EXPECT_EQ(s_->stats().kv_transfer_refused, 1u);
  EXPECT_EQ(prefill_->used_blocks(), 0u);
}

TEST_F(scheduler_test, a_transfer_worker_dying_with_the_job_requeues_and_routes_co_located) {
  start_physical();
  auto p = one<run_prefill>(s_->submit(request(1)));
  auto t = one<run_transfer>(s_->prefill_finished(worker_kind::prefill, prefilled(p)));
  auto acts = s_->transfer_failed(t.job.id, true, make_error(errc::worker_failed, "down"));
  // Requeued and admitted again at once: co-located, since the transfer worker is down.
  auto again = one<run_prefill>(acts);
  EXPECT_EQ(again.worker, worker_kind::fallback);
  EXPECT_FALSE(s_->worker_running(worker_kind::transfer));
  EXPECT_EQ(prefill_->used_blocks(), 0u) << "the prefill-pool copy died with the job";
  EXPECT_EQ(decode_->used_blocks(), 4u) << "one decode reservation, the new one";
  EXPECT_EQ(s_->stats().last_route_reason.empty(), false);
}

TEST_F(scheduler_test, a_prefill_past_its_deadline_fails_over_and_the_late_reply_is_dropped) {
  start_physical();
  auto p = one<run_prefill>(s_->submit(request(1)));
  now_ += 2;
  EXPECT_TRUE(s_->tick().empty());
  now_ += 5;
  auto f = one<run_prefill>(s_->tick());
  EXPECT_EQ(f.worker, worker_kind::fallback);
  EXPECT_EQ(s_->stage_of(1), request_stage::prefilling);
  EXPECT_EQ(s_->stats().prefill_failovers, 1u);
  auto late = s_->prefill_finished(worker_kind::prefill, prefilled(p));
  EXPECT_TRUE(all_of<run_transfer>(late).empty());
  EXPECT_EQ(prefill_->used_blocks(), 0u);
  (void)one<run_decode>(s_->prefill_finished(f.worker, prefilled(f)));
}

TEST_F(scheduler_test, a_failing_prefill_device_fails_over_instead_of_failing_the_request) {
  start_physical();
  auto p = one<run_prefill>(s_->submit(request(1)));
  auto f = one<run_prefill>(s_->prefill_failed(1, worker_kind::prefill, p.generation, true,
                                               make_error(errc::worker_failed, "device lost")));
  EXPECT_EQ(f.worker, worker_kind::fallback);
  EXPECT_FALSE(s_->worker_running(worker_kind::prefill));
  EXPECT_EQ(prefill_->used_blocks(), 0u);
  // New requests go co-located while the prefill device is down.
  auto next = one<run_prefill>(s_->submit(request(2)));
  EXPECT_EQ(next.worker, worker_kind::fallback);
}

TEST_F(scheduler_test, degradation_routes_co_located_and_cpu_fallback_moves_staged_prompts) {
  start_physical();
  auto staged = one<run_prefill>(s_->submit(request(1)));
  EXPECT_EQ(staged.worker, worker_kind::prefill);
  (void)s_->degrade(static_cast<uint8_t>(degradation_state::co_located), "82 C");
  auto p2 = one<run_prefill>(s_->submit(request(2)));
  EXPECT_EQ(p2.worker, worker_kind::fallback);
  EXPECT_NE(s_->stats().last_route_reason.find("82 C"), std::string::npos);
  auto moved = one<run_prefill>(s_->degrade(static_cast<uint8_t>(degradation_state::cpu_fallback), "link down"));
  EXPECT_EQ(moved.job.id, 1u);
  EXPECT_EQ(moved.worker, worker_kind::fallback);
}

TEST_F(scheduler_test, a_degraded_link_carries_the_configured_kv_wire) {
  prefill_ = make_pool();
  auto su = base_setup();
  su.prefill_pool = prefill_.get();
  su.degraded_kv_wire = 2;
  start(std::move(su));
  (void)s_->degrade(static_cast<uint8_t>(degradation_state::link_degraded), "140 GB/s");
  auto p = one<run_prefill>(s_->submit(request(1)));
  auto t = one<run_transfer>(s_->prefill_finished(worker_kind::prefill, prefilled(p)));
  EXPECT_EQ(t.job.wire, 2);
}

// -- offload --

TEST_F(scheduler_test, a_long_tail_sequence_moves_to_the_offload_device_and_is_cancelled_there) {
  start_with_offload();
  auto d = to_decode(1);
  auto seq = std::make_shared<int>(7);
  auto t = one<run_transfer>(s_->offload_requested(1, d.kv, 8, seq));
  EXPECT_EQ(t.job.to.pool_id, offload_->pool_id());
  EXPECT_EQ(s_->stage_of(1), request_stage::offloading);
  auto a = one<adopt_sequence>(s_->transfer_finished(transferred(t)));
  EXPECT_EQ(a.worker, worker_kind::offload);
  EXPECT_EQ(a.seq, seq) << "the sequence travels untouched";
  ASSERT_TRUE(a.kv.has_value());
  EXPECT_EQ(a.kv->pool_id, offload_->pool_id());
  EXPECT_EQ(s_->stage_of(1), request_stage::offloaded);
  EXPECT_EQ(decode_->used_blocks(), 0u);
  EXPECT_EQ(s_->stats().offloaded, 1u);
  EXPECT_EQ(one<cancel_decode>(s_->cancel(1)).worker, worker_kind::offload);
  // The offload worker hands the dropped sequence's KV back: released into the offload pool.
  finished_ids f;
  f.ids = {1};
  f.kvs = {*a.kv};
  f.kv_tokens = {{}};
  (void)s_->finished(std::move(f));
  EXPECT_EQ(offload_->used_blocks(), 0u);
}

TEST_F(scheduler_test, offload_policy_asks_the_decode_worker_for_a_long_tail_once) {
  start_with_offload();
  auto d = to_decode(1);
  EXPECT_TRUE(all_of<hand_over>(step({1})).empty()) << "1 generated token: not a long tail yet";
  EXPECT_TRUE(all_of<hand_over>(step({1})).empty());
  auto h = one<hand_over>(step({1}));
  EXPECT_EQ(h.worker, worker_kind::decode);
  EXPECT_EQ(h.id, 1u);
  EXPECT_TRUE(all_of<hand_over>(step({1})).empty()) << "asked already: not again while it comes";
  (void)one<run_transfer>(s_->offload_requested(1, d.kv, 5, std::make_shared<int>(1)));
  const auto st = s_->stats();
  EXPECT_EQ(st.offload_asked, 1u);
  EXPECT_EQ(st.offload_missed, 0u);
}

TEST_F(scheduler_test, a_long_tail_that_finishes_before_its_hand_over_counts_as_missed) {
  start_with_offload();
  auto d = to_decode(1);
  for (int i = 0; i < 2; ++i) (void)step({1});
  (void)one<hand_over>(step({1}));
  (void)finish(d);  // the worker's done report overtook the hand-over
  const auto st = s_->stats();
  EXPECT_EQ(st.offload_asked, 1u);
  EXPECT_EQ(st.offload_missed, 1u);
  EXPECT_EQ(decode_->used_blocks(), 0u);
}

TEST_F(scheduler_test, rollout_stages_below_four_are_never_offloaded) {
  rollout_limits r;
  r.start_stage = 3;
  start_with_offload(r);
  (void)to_decode(1);
  for (int i = 0; i < 6; ++i) EXPECT_TRUE(all_of<hand_over>(step({1})).empty());
}

TEST_F(scheduler_test, an_offload_that_cannot_move_keeps_decoding_where_it_is) {
  start_with_offload();
  auto d = to_decode(1);
  auto t = one<run_transfer>(s_->offload_requested(1, d.kv, 8, std::make_shared<int>(1)));
  auto back = one<adopt_sequence>(s_->transfer_failed(1, true, make_error(errc::worker_failed, "down")));
  EXPECT_EQ(back.worker, worker_kind::decode);
  EXPECT_FALSE(back.kv.has_value());
  EXPECT_EQ(offload_->used_blocks(), 0u);
  // With the transfer worker down, the next hand-over goes straight back.
  auto again = one<adopt_sequence>(s_->offload_requested(1, d.kv, 8, std::make_shared<int>(1)));
  EXPECT_EQ(again.worker, worker_kind::decode);
  EXPECT_EQ(s_->stats().offload_refused, 2u);
  EXPECT_EQ(s_->stage_of(1), request_stage::decoding);
}

TEST_F(scheduler_test, a_sequence_cancelled_in_transit_is_freed_on_both_pools_when_the_transfer_replies) {
  start_with_offload();
  auto d = to_decode(1);
  auto t = one<run_transfer>(s_->offload_requested(1, d.kv, 8, std::make_shared<int>(1)));
  EXPECT_TRUE(s_->cancel(1).empty());
  EXPECT_TRUE(s_->transfer_finished(transferred(t)).empty());
  EXPECT_EQ(decode_->used_blocks(), 0u);
  EXPECT_EQ(offload_->used_blocks(), 0u);
}

TEST_F(scheduler_test, a_lost_offload_worker_re_admits_its_sequences) {
  start_with_offload();
  auto d = to_decode(1);
  auto t = one<run_transfer>(s_->offload_requested(1, d.kv, 8, std::make_shared<int>(1)));
  (void)one<adopt_sequence>(s_->transfer_finished(transferred(t)));
  auto p = one<run_prefill>(s_->worker_lost(worker_kind::offload, "crashed"));
  EXPECT_EQ(p.job.id, 1u);
  EXPECT_EQ(offload_->used_blocks(), 0u);
  EXPECT_EQ(s_->stage_of(1), request_stage::prefilling);
}

// -- policies the scheduler consults --

TEST_F(scheduler_test, admission_tpot_holds_requests_the_predicted_step_cannot_carry) {
  auto su = base_setup();
  su.admission_tpot_s = 0.010;
  start(std::move(su));
  auto d = to_decode(1);
  // Steps of 1 sequence: 2 ms per layer-row, 0.1 ms per context token (two context sizes fit both).
  for (int i = 0; i < 8; ++i) {
    step_tokens t;
    t.rows = 1;
    t.sum_context = 10 + 10 * (i % 2);
    t.step_s = 0.002 * 2 + 0.0001 * static_cast<double>(t.sum_context);
    (void)s_->progress(t);
  }
  EXPECT_EQ(s_->stats().predictor_steps, 8u);
  (void)one<run_prefill>(s_->submit(request(2)));  // 2 rows: ~10 ms, within the target
  EXPECT_TRUE(s_->submit(request(3)).empty()) << "a third row would pass 10 ms";
  EXPECT_EQ(s_->stage_of(3), request_stage::waiting);
  EXPECT_GE(s_->stats().admission_holds, 1u);
}

TEST_F(scheduler_test, rollout_stage_one_serves_without_speculation_and_prefills_in_one_forward) {
  auto su = base_setup();
  rollout_limits r;
  r.start_stage = 1;
  su.rollout = r;
  start(std::move(su));
  auto p = one<run_prefill>(s_->submit(request(1)));
  EXPECT_EQ(p.job.chunk, 1u << 16);
  auto d = one<run_decode>(s_->prefill_finished(p.worker, prefilled(p))).job;
  EXPECT_EQ(d.params.max_draft_k, 0);
  EXPECT_EQ(s_->stats().rollout_stage, 1u);
}

}  // namespace
}  // namespace fw
