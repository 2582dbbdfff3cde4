// The scheduler's prefill queue for one device (setup::prefill_shortest_first, [scheduler]
// prefill_order = "shortest"): one slice on the worker at a time, the least work left next, the
// rest of a prompt keeping its KV between slices, and cancel / failure / timeout in between.
#include "tests/runtime/sched/scheduler_fixture.hpp"

namespace fw {
namespace {

class prefill_queue_test : public scheduler_test {
 protected:
  void start_shortest(uint32_t slice = 8, double max_wait_s = 2.0) {
    auto su = base_setup();
    su.n_ctx = 256;
    su.prefill_shortest_first = true;
    su.prefill_slice = slice;
    su.prefill_max_wait_s = max_wait_s;
    start(std::move(su));
  }
};

TEST_F(prefill_queue_test, a_short_prompt_behind_a_long_one_waits_for_one_slice_not_its_whole_prefill) {
  start_shortest(8);
  auto long_slice = one<run_prefill>(s_->submit(request(1, 41)));  // 40 tokens to prefill
  EXPECT_EQ(long_slice.job.tokens.size(), 8u) << "a slice of the long prompt";
  EXPECT_TRUE(all_of<run_prefill>(s_->submit(request(2, 6))).empty()) << "one slice on the worker at a time";
  EXPECT_EQ(s_->stage_of(2), request_stage::prefilling);

  // The long prompt's first slice ends: the short prompt goes next, whole (5 <= 8 tokens).
  auto acts = s_->prefill_finished(worker_kind::prefill, prefilled(long_slice));
  EXPECT_TRUE(all_of<run_decode>(acts).empty()) << "the long prompt is not done";
  auto short_job = one<run_prefill>(acts);
  EXPECT_EQ(short_job.job.id, 2u);
  EXPECT_EQ(short_job.job.tokens, std::vector<int32_t>({1, 2, 3, 4, 5}));
  acts = s_->prefill_finished(worker_kind::prefill, prefilled(short_job));
  EXPECT_EQ(one<run_decode>(acts).job.id, 2u) << "the short request decodes while the long one prefills";

  // The long prompt carries on from where its KV is, 8 tokens at a time, to the end.
  auto next = one<run_prefill>(acts);
  uint32_t expected_pos = 8;
  int32_t first_token = 9;
  for (;;) {
    EXPECT_EQ(next.job.id, 1u);
    EXPECT_EQ(next.job.kv.n_tokens, expected_pos);
    EXPECT_EQ(next.job.tokens.front(), first_token);
    expected_pos += static_cast<uint32_t>(next.job.tokens.size());
    first_token += static_cast<int32_t>(next.job.tokens.size());
    acts = s_->prefill_finished(worker_kind::prefill, prefilled(next));
    if (auto d = all_of<run_decode>(acts); !d.empty()) {
      EXPECT_EQ(d.front().job.id, 1u);
      EXPECT_EQ(d.front().job.kv.n_tokens, 40u) << "every prompt token but the last, once";
      break;
    }
    next = one<run_prefill>(acts);
  }
  EXPECT_EQ(expected_pos, 40u);
  const auto st = s_->stats();
  EXPECT_EQ(st.prefill_slices, 6u) << "5 slices of the long prompt and the short one";
  EXPECT_EQ(st.prefill_reordered, 1u) << "the short prompt went before the older long one once";
}

TEST_F(prefill_queue_test, a_scored_prompt_s_slices_each_score_up_to_the_next_slice_s_first_token) {
  start_shortest(8);
  auto req = request(1, 21);  // tokens 1..21: 20 prefilled in slices of 8, 8 and 4
  req.params.prompt_logprobs = 1;
  auto slice = one<run_prefill>(s_->submit(std::move(req)));
  std::vector<int32_t> scored_tokens;
  for (const int32_t next : {9, 17, 21}) {
    EXPECT_EQ(slice.job.prompt_logprobs, 1);
    EXPECT_EQ(slice.job.next_token, next);
    auto d = prefilled(slice);
    for (size_t i = 0; i < slice.job.tokens.size(); ++i) {
      token_logprobs t;
      t.token = i + 1 < slice.job.tokens.size() ? slice.job.tokens[i + 1] : slice.job.next_token;
      d.prompt_logprobs.push_back(t);
    }
    auto acts = s_->prefill_finished(worker_kind::prefill, std::move(d));
    if (next == 21) {
      for (const auto& t : one<run_decode>(acts).job.prompt_logprobs) scored_tokens.push_back(t.token);
      break;
    }
    slice = one<run_prefill>(acts);
  }
  std::vector<int32_t> want(20);
  std::iota(want.begin(), want.end(), 2);
  EXPECT_EQ(scored_tokens, want) << "every prompt token after the first, once, in order";
}

TEST_F(prefill_queue_test, a_prompt_waiting_past_the_bound_is_not_starved_by_shorter_ones) {
  start_shortest(8, 2.0);
  auto slice = one<run_prefill>(s_->submit(request(1, 41)));
  now_ += 1;
  (void)s_->submit(request(2, 6, 8, 100));
  auto acts = s_->prefill_finished(worker_kind::prefill, prefilled(slice));
  EXPECT_EQ(one<run_prefill>(acts).job.id, 2u) << "1 s old: the shorter goes first";
  slice = one<run_prefill>(acts);
  now_ += 1.5;  // request 1 has now waited 2.5 s
  (void)s_->submit(request(3, 6, 8, 200));
  acts = s_->prefill_finished(worker_kind::prefill, prefilled(slice));
  EXPECT_EQ(one<run_prefill>(acts).job.id, 1u) << "past the bound: the oldest, although 3 is shorter";
}

TEST_F(prefill_queue_test, a_cancel_between_slices_releases_the_kv_at_once_and_the_next_prompt_runs) {
  start_shortest(8);
  const uint32_t free0 = decode_->free_blocks();
  auto slice = one<run_prefill>(s_->submit(request(1, 41)));
  (void)s_->submit(request(2, 30, 8, 100));
  auto acts = s_->prefill_finished(worker_kind::prefill, prefilled(slice));
  slice = one<run_prefill>(acts);
  EXPECT_EQ(slice.job.id, 2u) << "29 tokens left against 32";
  // Cancel request 1, which waits with 8 tokens in its KV: nothing is on a worker for it.
  acts = s_->cancel(1);
  EXPECT_TRUE(all_of<run_prefill>(acts).empty());
  EXPECT_EQ(s_->stage_of(1), request_stage::unknown);
  EXPECT_EQ(decode_->used_blocks(), decode_->total_blocks() - free0 + 10u)
      << "only request 2's worst case (30 + 8 tokens: 10 blocks) is still held";
  // A timeout of a waiting prompt between slices releases it the same way.
  now_ += 61;
  acts = s_->tick();
  EXPECT_EQ(one<fail_request>(acts).id, 2u);
  acts = s_->prefill_finished(worker_kind::prefill, prefilled(slice));
  EXPECT_TRUE(all_of<run_decode>(acts).empty());
  EXPECT_TRUE(all_of<run_prefill>(acts).empty());
  EXPECT_EQ(decode_->free_blocks(), free0) << "every block back";
}

TEST_F(prefill_queue_test, a_worker_dying_on_a_slice_requeues_that_request_and_the_queue_waits_for_the_replacement) {
  start_shortest(8);
  const uint32_t free0 = decode_->free_blocks();
  auto slice = one<run_prefill>(s_->submit(request(1, 41)));
  (void)s_->submit(request(2, 6, 8, 100));
  (void)s_->worker_lost(worker_kind::prefill, "killed");
  auto acts = s_->prefill_failed(1, worker_kind::prefill, slice.generation, true,
                                 make_error(errc::worker_failed, "killed"));
  EXPECT_TRUE(all_of<run_prefill>(acts).empty()) << "no worker: the queue waits";
  EXPECT_EQ(s_->stage_of(1), request_stage::waiting) << "innocent: back to waiting, its KV released by epoch";
  acts = s_->worker_up(worker_kind::prefill, true);
  auto p = one<run_prefill>(acts);
  EXPECT_EQ(p.job.id, 2u) << "the queued short prompt first";
  EXPECT_EQ(p.generation, s_->generation(worker_kind::prefill));
  acts = s_->prefill_finished(worker_kind::prefill, prefilled(p));
  auto d2 = one<run_decode>(acts).job;
  auto again = one<run_prefill>(acts);
  EXPECT_EQ(again.job.id, 1u) << "request 1, admitted again, prefills from its first token";
  EXPECT_EQ(again.job.kv.n_tokens, 0u);
  EXPECT_EQ(again.job.tokens.front(), 1);
  (void)finish(d2);
  EXPECT_EQ(decode_->free_blocks() + 13u, free0) << "only request 1's worst case (41 + 8 tokens) is held";
}

}  // namespace
}  // namespace fw
