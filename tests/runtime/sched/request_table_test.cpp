// The scheduler's request state machine and its policy, driven with fabricated events (no actors,
// no clock): admission order and limits, KV-bounded admission, cancellation in every phase,
// re-queue when a prefill worker dies, decode-worker loss, expiry.
#include <gtest/gtest.h>

#include <algorithm>

#include "runtime/sched/admission.hpp"
#include "runtime/sched/request_table.hpp"
#include "runtime/sched/scheduler_policy.hpp"

namespace fw {
namespace {

scheduler_limits limits(uint32_t running = 4, uint32_t queue = 8, uint32_t blocks = 10, double timeout = 100) {
  scheduler_limits l;
  l.max_running = running;
  l.max_queue = queue;
  l.total_kv_blocks = blocks;
  l.request_timeout_s = timeout;
  return l;
}

TEST(scheduler_policy_test, admits_in_fifo_order_while_the_batch_and_the_pool_have_room) {
  scheduler_policy p(limits(2, 8, 10));
  ASSERT_TRUE(p.enqueue({1, 3, 0}));
  ASSERT_TRUE(p.enqueue({2, 3, 0}));
  ASSERT_TRUE(p.enqueue({3, 3, 0}));
  EXPECT_EQ(p.admit(10), (std::vector<uint64_t>{1, 2}));  // the batch holds two
  EXPECT_EQ(p.running(), 2u);
  EXPECT_TRUE(p.is_waiting(3));
  EXPECT_TRUE(p.remove(1));
  EXPECT_EQ(p.admit(2), std::vector<uint64_t>{}) << "3 blocks do not fit in 2";
  EXPECT_EQ(p.admit(3), std::vector<uint64_t>{3});
}

TEST(scheduler_policy_test, head_of_line_waits_so_a_large_request_is_not_starved) {
  scheduler_policy p(limits(4, 8, 10));
  ASSERT_TRUE(p.enqueue({1, 8, 0}));
  ASSERT_TRUE(p.enqueue({2, 1, 0}));
  EXPECT_TRUE(p.admit(5).empty()) << "the small one must not overtake the large one";
  EXPECT_EQ(p.admit(9), (std::vector<uint64_t>{1, 2}));
}

TEST(scheduler_policy_test, refuses_a_full_queue_and_a_request_larger_than_the_pool) {
  scheduler_policy p(limits(4, 2, 10));
  ASSERT_TRUE(p.enqueue({1, 1, 0}));
  ASSERT_TRUE(p.enqueue({2, 1, 0}));
  auto full = p.enqueue({3, 1, 0});
  ASSERT_FALSE(full);
  EXPECT_EQ(full.err().code, errc::overloaded);
  auto huge = p.enqueue({4, 11, 0});
  ASSERT_FALSE(huge);
  EXPECT_EQ(huge.err().code, errc::out_of_memory);
  EXPECT_NE(huge.err().message.find("11 KV blocks"), std::string::npos) << huge.err().message;
}

TEST(scheduler_policy_test, expires_waiting_and_running_requests_after_the_timeout) {
  scheduler_policy p(limits(1, 8, 10, 5.0));
  ASSERT_TRUE(p.enqueue({1, 1, 0.0}));
  ASSERT_TRUE(p.enqueue({2, 1, 3.0}));
  ASSERT_EQ(p.admit(10), std::vector<uint64_t>{1});
  EXPECT_TRUE(p.expire(4.9).empty());
  EXPECT_EQ(p.expire(5.5), std::vector<uint64_t>{1});  // running, submitted at 0
  EXPECT_EQ(p.expire(8.5), std::vector<uint64_t>{2});  // waiting, submitted at 3
  EXPECT_EQ(p.running() + p.waiting(), 0u);
}

TEST(scheduler_policy_test, decode_order_takes_the_longest_generations_first) {
  EXPECT_EQ(scheduler_policy::decode_order({{1, 5}, {2, 9}, {3, 9}, {4, 0}}, 3), (std::vector<uint64_t>{2, 3, 1}));
}

TEST(admission_test, checks_prompt_vocabulary_context_and_budget) {
  const std::vector<int32_t> p{1, 2, 3};
  EXPECT_EQ(*admit_request(p, 10, 8, -1), 5u) << "the context's rest";
  EXPECT_EQ(*admit_request(p, 10, 8, 4), 4u);
  EXPECT_EQ(admit_request(p, 10, 8, 6).err().code, errc::context_overflow);
  EXPECT_EQ(admit_request({}, 10, 8, 4).err().code, errc::invalid_argument);
  EXPECT_EQ(admit_request(std::vector<int32_t>{1, 10}, 10, 8, 4).err().code, errc::invalid_argument);
  EXPECT_EQ(admit_request(std::vector<int32_t>(8, 1), 10, 8, 0).err().code, errc::context_overflow);
  EXPECT_EQ(admit_request(p, 10, 8, 0).err().code, errc::invalid_argument);
  EXPECT_EQ(*admit_request(p, 10, 8, 0, true), 0u);
}

TEST(request_table_test, a_request_goes_waiting_prefilling_decoding_done) {
  request_table t(limits());
  ASSERT_TRUE(t.submit(7, 10, 20, 2, 0));
  EXPECT_EQ(t.find(7)->phase, request_phase::waiting);
  EXPECT_EQ(t.counts().waiting, 1u);
  ASSERT_EQ(t.admit(10), std::vector<uint64_t>{7});
  t.started(7, 42);
  EXPECT_EQ(t.find(7)->phase, request_phase::prefilling);
  EXPECT_EQ(t.find(7)->epoch, 42u);
  EXPECT_EQ(t.prefilled(7), request_table::after_prefill::decode);
  EXPECT_EQ(t.find(7)->phase, request_phase::decoding);
  t.finished({7});
  EXPECT_EQ(t.find(7), nullptr);
  EXPECT_EQ(t.counts().completed, 1u);
  EXPECT_EQ(t.size(), 0u);
}

TEST(request_table_test, duplicate_ids_and_full_queues_are_refused) {
  request_table t(limits(4, 1, 10));
  ASSERT_TRUE(t.submit(1, 1, 1, 1, 0));
  EXPECT_EQ(t.submit(1, 1, 1, 1, 0).err().code, errc::invalid_argument);
  EXPECT_EQ(t.submit(2, 1, 1, 1, 0).err().code, errc::overloaded);
  EXPECT_EQ(t.counts().peak_waiting, 1u);
}

TEST(request_table_test, cancel_in_each_phase_says_what_to_do_with_the_kv) {
  request_table t(limits());
  for (uint64_t id : {1, 2, 3}) ASSERT_TRUE(t.submit(id, 1, 1, 1, 0));
  ASSERT_TRUE(t.submit(4, 1, 1, 1, 0));
  t.admit(3);  // 1, 2, 3 prefilling; 4 waits (no blocks)
  t.started(1, 11), t.started(2, 12), t.started(3, 13);
  ASSERT_EQ(t.prefilled(3), request_table::after_prefill::decode);
  EXPECT_EQ(t.cancel(4), request_table::cancel_outcome::removed);
  EXPECT_EQ(t.cancel(2), request_table::cancel_outcome::release_later);
  EXPECT_EQ(t.counts().prefilling, 1u) << "a cancelled prefill no longer counts";
  EXPECT_EQ(t.prefilled(2), request_table::after_prefill::release) << "its reply releases the KV";
  EXPECT_EQ(t.cancel(3), request_table::cancel_outcome::cancel_in_decode);
  EXPECT_EQ(t.cancel(3), request_table::cancel_outcome::unknown);
  EXPECT_EQ(t.cancel(99), request_table::cancel_outcome::unknown);
  EXPECT_EQ(t.size(), 1u);  // only 1, still prefilling
}

TEST(request_table_test, a_dead_prefill_worker_requeues_innocent_requests_and_fails_the_one_it_died_on) {
  request_table t(limits());
  for (uint64_t id : {1, 2}) ASSERT_TRUE(t.submit(id, 4, 4, 1, 0));
  t.admit(10);
  t.started(1, 21), t.started(2, 22);
  const auto culprit = t.prefill_failed(1, false, 1.0);
  EXPECT_TRUE(culprit.known);
  EXPECT_FALSE(culprit.requeued);
  EXPECT_EQ(culprit.epoch, 21u) << "the owner releases the job's KV";
  const auto innocent = t.prefill_failed(2, true, 1.0);
  EXPECT_TRUE(innocent.requeued);
  EXPECT_EQ(innocent.epoch, 22u);
  EXPECT_EQ(t.find(2)->phase, request_phase::waiting);
  EXPECT_EQ(t.find(2)->epoch, 0u);
  EXPECT_EQ(t.admit(10), std::vector<uint64_t>{2}) << "it runs again";
  const auto c = t.counts();
  EXPECT_EQ(c.failed, 1u);
  EXPECT_EQ(c.requeued, 1u);
  EXPECT_FALSE(t.prefill_failed(99, true, 1.0).known);
}

TEST(request_table_test, a_cancelled_request_whose_prefill_fails_is_not_counted_as_failed) {
  request_table t(limits());
  ASSERT_TRUE(t.submit(1, 4, 4, 1, 0));
  t.admit(10);
  t.started(1, 5);
  t.cancel(1);
  const auto f = t.prefill_failed(1, true, 1.0);
  EXPECT_TRUE(f.was_cancelled);
  EXPECT_FALSE(f.requeued);
  EXPECT_EQ(t.counts().failed, 0u);
  EXPECT_EQ(t.size(), 0u);
}

TEST(request_table_test, losing_the_decode_worker_fails_exactly_the_decoding_requests) {
  request_table t(limits());
  for (uint64_t id : {1, 2, 3}) ASSERT_TRUE(t.submit(id, 1, 1, 1, 0));
  t.admit(10);
  for (uint64_t id : {1, 2, 3}) t.started(id, static_cast<uint32_t>(30 + id));
  t.prefilled(1), t.prefilled(3);
  auto lost = t.decode_worker_lost();
  std::sort(lost.begin(), lost.end());
  EXPECT_EQ(lost, (std::vector<std::pair<uint64_t, uint32_t>>{{1, 31}, {3, 33}}));
  EXPECT_EQ(t.find(2)->phase, request_phase::prefilling) << "the prefilling one is untouched";
  EXPECT_EQ(t.counts().failed, 2u);
}

TEST(request_table_test, a_lost_decode_worker_requeues_its_requests_at_the_head_of_the_queue) {
  request_table t(limits(2));  // two running at most
  for (uint64_t id : {1, 2, 3, 4}) ASSERT_TRUE(t.submit(id, 1, 1, 1, 0));
  EXPECT_EQ(t.admit(10), (std::vector<uint64_t>{1, 2}));
  t.started(1, 41), t.started(2, 42);
  t.prefilled(1), t.prefilled(2);
  auto lost = t.requeue_decoding([](uint64_t id) { return id != 2; }, 1.0);  // 2 lives elsewhere
  EXPECT_EQ(lost, (std::vector<std::pair<uint64_t, uint32_t>>{{1, 41}}));
  EXPECT_EQ(t.find(1)->phase, request_phase::waiting);
  EXPECT_EQ(t.find(1)->epoch, 0u);
  EXPECT_EQ(t.find(2)->phase, request_phase::decoding);
  // 1 is re-admitted before 3 and 4, which were waiting before it was lost.
  EXPECT_EQ(t.admit(10), std::vector<uint64_t>{1});
  const auto c = t.counts();
  EXPECT_EQ(c.resumed, 1u);
  EXPECT_EQ(c.failed, 0u);
  EXPECT_EQ(c.waiting, 2u);
}

TEST(request_table_test, expiry_reports_each_request_with_its_phase) {
  request_table t(limits(4, 8, 10, 5.0));
  ASSERT_TRUE(t.submit(1, 1, 1, 1, 0.0));
  ASSERT_TRUE(t.submit(2, 1, 1, 1, 0.0));
  ASSERT_TRUE(t.submit(3, 1, 1, 9, 0.0));
  t.admit(2);  // 1, 2 admitted; 3 needs 9 blocks and waits
  t.started(1, 1), t.started(2, 2);
  t.prefilled(2);
  auto out = t.expire(6.0);
  std::sort(out.begin(), out.end());
  EXPECT_EQ(out, (std::vector<std::pair<uint64_t, request_phase>>{
                     {1, request_phase::prefilling}, {2, request_phase::decoding}, {3, request_phase::waiting}}));
  EXPECT_EQ(t.prefilled(1), request_table::after_prefill::release) << "the expired prefill's KV is released";
  EXPECT_EQ(t.size(), 0u);
  EXPECT_EQ(t.counts().failed, 3u);
}

TEST(request_table_test, a_failed_admission_allocation_and_a_decode_failure_remove_the_request) {
  request_table t(limits());
  ASSERT_TRUE(t.submit(1, 1, 1, 1, 0));
  ASSERT_TRUE(t.submit(2, 1, 1, 1, 0));
  t.admit(10);
  t.allocation_failed(1);
  t.started(2, 3);
  t.prefilled(2);
  EXPECT_TRUE(t.failed(2));
  EXPECT_FALSE(t.failed(2));
  EXPECT_EQ(t.size(), 0u);
  EXPECT_EQ(t.counts().failed, 2u);
}

}  // namespace
}  // namespace fw
