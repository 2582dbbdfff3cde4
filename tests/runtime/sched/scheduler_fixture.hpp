// The scheduler tests' fixture: real KV pools, a fake clock, and what workers reply (tests/runtime/sched).
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <numeric>
#include <variant>
#include <vector>

#include "runtime/sched/scheduler.hpp"
#include "runtime/supervise/degradation_policy.hpp"

namespace fw {
namespace {

kv_layout tiny_layout() {
  kv_layout l;
  l.n_layer = 1;
  l.n_head_kv = 1;
  l.head_dim = 4;
  l.block_tokens = 4;
  return l;
}

std::unique_ptr<kv_block_pool> make_pool(uint32_t blocks = 64) {
  auto p = kv_block_pool::create(kv_block_pool::next_pool_id(), tiny_layout(), blocks);
  EXPECT_TRUE(p.has_value());
  return std::move(*p);
}

template <class A>
std::vector<A> all_of(const scheduler_actions& acts) {
  std::vector<A> out;
  for (const auto& a : acts)
    if (const A* x = std::get_if<A>(&a)) out.push_back(*x);
  return out;
}

/// The one action of kind A in acts (a failure when there is not exactly one).
template <class A>
A one(const scheduler_actions& acts) {
  auto v = all_of<A>(acts);
  EXPECT_EQ(v.size(), 1u) << "expected exactly one action of this kind among " << acts.size();
  return v.empty() ? A{} : v.front();
}

client_request request(uint64_t id, uint32_t prompt_tokens = 6, int32_t max_tokens = 8, int32_t first = 1) {
  client_request r;
  r.id = id;
  r.prompt.resize(prompt_tokens);
  std::iota(r.prompt.begin(), r.prompt.end(), first);
  r.params.max_tokens = max_tokens;
  return r;
}

/// What a prefill worker replies: the job's handle with its tokens written.
prefill_done prefilled(const run_prefill& p, double ms = 10) {
  prefill_done d;
  d.id = p.job.id;
  d.kv = p.job.kv;
  d.kv.n_tokens += static_cast<uint32_t>(p.job.tokens.size());
  d.ms = ms;
  d.chunks = 1;
  d.rows = static_cast<uint32_t>(p.job.tokens.size());
  d.attention_entropy = 1.5f;
  return d;
}

/// What the transfer worker replies when the stream went through (error: refused).
[[maybe_unused]] transfer_done transferred(const run_transfer& t, std::string error = {}) {
  transfer_done d;
  d.id = t.job.id;
  d.from = t.job.from;
  d.to = t.job.to;
  if (error.empty()) d.to.n_tokens = t.job.from.n_tokens;
  d.bytes = 1000;
  d.f32_bytes = 2000;
  d.ms = 1;
  d.error = std::move(error);
  return d;
}

class scheduler_test : public ::testing::Test {
 protected:
  double now_ = 100;
  std::unique_ptr<kv_block_pool> decode_ = make_pool(), prefill_, offload_;
  std::unique_ptr<scheduler> s_;

  scheduler::setup base_setup() {
    scheduler::setup su;
    su.decode_pool = decode_.get();
    su.n_vocab = 1000;
    su.n_ctx = 128;
    su.n_layer = 2;
    su.max_batch = 4;
    su.max_queue = 8;
    su.request_timeout_s = 60;
    su.prefill_deadline_s = 3;
    su.clock = [this] { return now_; };
    return su;
  }

  /// Builds the scheduler and starts the workers its devices need.
  void start(scheduler::setup su, bool workers = true) {
    s_ = std::make_unique<scheduler>(std::move(su));
    if (!workers) return;
    for (worker_kind w : {worker_kind::prefill, worker_kind::decode}) (void)s_->worker_up(w, false);
    if (s_->physical()) (void)s_->worker_up(worker_kind::fallback, false);
    if (s_->physical() || offload_) (void)s_->worker_up(worker_kind::transfer, false);
    if (offload_) (void)s_->worker_up(worker_kind::offload, false);
  }

  void start_physical(uint32_t prefix_cache_blocks = 0) {
    prefill_ = make_pool();
    auto su = base_setup();
    su.prefill_pool = prefill_.get();
    su.prefix_cache_blocks = prefix_cache_blocks;
    start(std::move(su));
  }

  void start_with_offload(std::optional<rollout_limits> rollout = {}) {
    offload_ = make_pool();
    auto su = base_setup();
    su.offload_pool = offload_.get();
    su.offload.min_generated = 2;     // a long tail after 2 tokens
    su.offload.max_free_share = 1.0;  // the decode pool always counts as short of memory
    su.rollout = rollout;
    start(std::move(su));
  }

  /// One decode-device step that produced one token for each of ids.
  scheduler_actions step(std::vector<uint64_t> ids) {
    step_tokens t;
    t.ids = ids;
    t.tokens.assign(ids.size(), 50);
    t.rows = static_cast<uint32_t>(ids.size());
    t.sum_context = 10 * ids.size();
    t.step_s = 0.005;
    return s_->progress(t);
  }


  /// Submits a request and runs its prefill on the worker it went to; returns its decode job.
  decode_job to_decode(uint64_t id, uint32_t prompt_tokens = 6) {
    auto p = one<run_prefill>(s_->submit(request(id, prompt_tokens)));
    return one<run_decode>(s_->prefill_finished(p.worker, prefilled(p))).job;
  }

  /// A decode worker finishing `job`: it hands the KV back (the scheduler releases or caches it).
  scheduler_actions finish(const decode_job& job, std::vector<int32_t> tokens = {}) {
    finished_ids f;
    f.ids = {job.id};
    f.kvs = {job.kv};
    f.kv_tokens = {std::move(tokens)};
    return s_->finished(std::move(f));
  }
};

}  // namespace
}  // namespace fw
