#include "runtime/step/batch_decoder.hpp"

#include "runtime/sample/token_logprobs.hpp"

#include "runtime/sched/scheduler_policy.hpp"

#include <algorithm>
#include <chrono>
#include <utility>

namespace fw {

namespace {
double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

batch_decoder::~batch_decoder() { clear(); }

void batch_decoder::set_speculation(drafter* draft, k_policy policy) {
  draft_ = draft;
  remote_ = false;
  policy_ = policy;
  gate_ = spec_gate{};
  reset_step_costs();
}

void batch_decoder::set_remote_speculation(draft_traits traits, k_policy policy) {
  draft_ = nullptr;
  remote_ = true;
  traits_ = traits;
  policy_ = policy;
  gate_ = spec_gate{};
  reset_step_costs();
}

void batch_decoder::reset_step_costs() {
  calibrated_cost_ = policy_.config().verify_cost;
  costs_ = step_cost_tracker(static_cast<int>(calibrated_cost_.size()));
  steps_since_costs_ = 0;
}

void batch_decoder::set_step_costs(const step_cost_tracker& c) {
  costs_ = c;
  if (calibrated_cost_.size() > 1 && policy_.config().learn_step_costs) policy_.set_verify_cost(costs_.costs(calibrated_cost_));
}

void batch_decoder::observe_step_cost(size_t rows, double seconds) {
  if (!policy_.config().adaptive || !policy_.config().learn_step_costs || calibrated_cost_.size() < 2) return;
  costs_.observe(static_cast<int>(rows), seconds);
  if (++steps_since_costs_ < cost_refresh_steps) return;
  steps_since_costs_ = 0;
  policy_.set_verify_cost(costs_.costs(calibrated_cost_));
}

bool batch_decoder::stop_speculating(uint64_t id) {
  auto it = seqs_.find(id);
  if (it == seqs_.end()) return false;
  it->second.remote = false;
  return true;
}

void batch_decoder::stop_all_speculation() {
  for (auto& [id, sl] : seqs_) sl.remote = false;
}

std::vector<const sequence*> batch_decoder::restart_speculation() {
  std::vector<const sequence*> out;
  if (!remote_) return out;
  for (auto& [id, sl] : seqs_)
    if (sl.seq->params().max_draft_k != 0) {
      sl.remote = true;
      out.push_back(sl.seq.get());
    }
  return out;
}

std::vector<uint64_t> batch_decoder::take_draft_ends() { return std::exchange(draft_ends_, {}); }

void batch_decoder::end_draft(slot& sl) {
  if (sl.draft) sl.draft->end(sl.seq->id());
  else if (sl.remote) draft_ends_.push_back(sl.seq->id());
}

void batch_decoder::tell_draft(slot& sl, size_t before, bool verdict, std::span<const float> hidden, step_result& res) {
  sequence& s = *sl.seq;
  if (sl.draft) {
    if (verdict) sl.draft->accept(s.id(), s.history());
    if (!hidden.empty() && sl.draft->wants_hidden()) sl.draft->observe_hidden(s.id(), s.history(), hidden);
  } else if (sl.remote && !s.finished()) {
    // Every step, proposal or not: the draft actor's copy of the history follows the target's.
    step_result::draft_feedback fb;
    fb.id = s.id();
    fb.appended.assign(s.history().begin() + static_cast<std::ptrdiff_t>(before), s.history().end());
    if (traits_.wants_hidden) fb.hidden.assign(hidden.begin(), hidden.end());
    res.feedback.push_back(std::move(fb));
  }
}

void batch_decoder::fill_proposals(step_plan& p, std::vector<draft_answer> answers) {
  for (auto& a : answers) {
    auto ask = std::find_if(p.asks.begin(), p.asks.end(), [&](const draft_ask& x) { return x.id == a.id; });
    auto ps = std::find_if(p.seqs.begin(), p.seqs.end(), [&](const planned_sequence& x) { return x.id == a.id; });
    if (ask == p.asks.end() || ps == p.seqs.end() || !seqs_.count(a.id)) continue;
    if (a.gone) stop_speculating(a.id);
    if (a.gone || a.failed) {
      ++spec_.draft_failures;  // this sequence steps plainly
      p.draft_failed.push_back(a.id);
      continue;
    }
    draft_proposal prop = std::move(a.proposal);
    prop.truncate(static_cast<size_t>(std::max(0, ask->k)));
    ps->proposal = std::move(prop);
    ps->prefix_chosen = !traits_.scored;  // not scored: verified as proposed
  }
  choose_prefixes(p);
}

void batch_decoder::add(std::unique_ptr<sequence> s, std::optional<float> attention_entropy) {
  const uint64_t id = s->id();
  slot sl;
  const bool wants_drafts = s->params().max_draft_k != 0;  // 0: this request decodes plainly
  if (remote_ && wants_drafts) {
    sl.remote = true;  // the caller begins it on the draft actor
    sl.k = policy_.start(static_cast<int>(s->prompt_size()), attention_entropy);
  } else if (draft_ && wants_drafts && draft_->begin(id, s->history(), s->params())) {
    sl.draft = draft_;
    draft_->bind_target_kv(id, &s->kv());
    sl.k = policy_.start(static_cast<int>(s->prompt_size()), attention_entropy);
  } else if (draft_ && wants_drafts) {
    ++spec_.draft_failures;  // the sequence decodes plainly
    begin_failed_.push_back(id);  // reported with the next step
  }
  sl.seq = std::move(s);
  seqs_[id] = std::move(sl);
}

void batch_decoder::clear() {
  while (!seqs_.empty()) remove(seqs_.begin()->first);
}

bool batch_decoder::remove(uint64_t id) {
  auto it = seqs_.find(id);
  if (it == seqs_.end()) return false;
  end_draft(it->second);
  ignore_error("batch decoder: releasing a sequence's KV", backend_.kv_pool().release(it->second.seq->kv()));
  seqs_.erase(it);
  return true;
}

std::optional<kv_handle> batch_decoder::detach(uint64_t id) {
  auto it = seqs_.find(id);
  if (it == seqs_.end()) return std::nullopt;
  end_draft(it->second);
  kv_handle kv = std::move(it->second.seq->kv());
  seqs_.erase(it);
  return kv;
}

std::unique_ptr<sequence> batch_decoder::take(uint64_t id) {
  auto it = seqs_.find(id);
  if (it == seqs_.end()) return nullptr;
  end_draft(it->second);
  auto s = std::move(it->second.seq);
  seqs_.erase(it);
  return s;
}

std::vector<const sequence*> batch_decoder::sequences() const {
  std::vector<const sequence*> out;
  for (const auto& [id, sl] : seqs_) out.push_back(sl.seq.get());
  return out;
}

step_plan batch_decoder::plan() {
  step_plan p;
  std::vector<slot*> rows;
  if (seqs_.size() <= max_rows_) {
    for (auto& [id, sl] : seqs_) rows.push_back(&sl);
  } else {
    std::vector<std::pair<uint64_t, uint32_t>> order;
    for (auto& [id, sl] : seqs_) order.emplace_back(id, static_cast<uint32_t>(sl.seq->generated().size()));
    for (uint64_t id : scheduler_policy::decode_order(std::move(order), max_rows_)) rows.push_back(&seqs_[id]);
  }
  // With k = auto the gate may hold drafting off (measuring plain decoding, or because it is faster).
  const bool on = draft_ || remote_;
  const bool gated = on && policy_.config().adaptive;
  p.drafting = on && (!gated || gate_.allow_drafts());
  const auto t_draft = std::chrono::steady_clock::now();
  const int batch_rows = static_cast<int>(rows.size());  // the step's plain rows
  for (slot* sl : rows) {
    sequence& s = *sl->seq;
    planned_sequence ps;
    ps.id = s.id();
    ps.input = s.next_input();
    ps.position = s.next_position();
    p.want_hidden = p.want_hidden || (sl->draft && sl->draft->wants_hidden()) || (sl->remote && traits_.wants_hidden);
    if (sl->speculates() && p.drafting) {
      const bool scored = sl->draft ? sl->draft->scores_proposals() : traits_.scored;
      int k = scored ? policy_.k_for_scored(s.remaining()) : policy_.k_for(sl->k, s.remaining());
      if (gated && gate_.trial() && !scored) k = std::min(k, 1);  // judged by its cheapest proposal
      // In a batched step extra rows are weighed against the whole step (best_k's batch_rows).
      if (gated && !scored && batch_rows > 1 && sl->k.acceptance_ema >= 0 && policy_.config().verify_cost.size() > 1)
        k = std::min(k, policy_.best_k(sl->k.acceptance_ema, k, batch_rows));
      if (s.params().max_draft_k > 0) k = std::min(k, s.params().max_draft_k);  // the request's cap
      if (k_cap_ >= 0) k = std::min(k, k_cap_);  // the supervisor's (a degraded device or link)
      if (k <= 0) {
        if (!scored) policy_.observe(sl->k, 0, 0);
      } else if (sl->remote) {
        p.asks.push_back({s.id(), k, &s.kv()});  // fill_proposals() brings the draft actor's answer
      } else if (auto prop = sl->draft->propose(s.id(), s.history(), k); !prop) {
        ++spec_.draft_failures;  // this sequence steps plainly
        p.draft_failed.push_back(s.id());
      } else {
        ps.proposal = std::move(*prop);
        ps.prefix_chosen = !scored;
      }
    }
    p.seqs.push_back(std::move(ps));
  }
  choose_prefixes(p);
  p.draft_ms = ms_since(t_draft);
  return p;
}

void batch_decoder::choose_prefixes(step_plan& p) {
  // Scored proposals (k = auto) are cut to the prefixes that pay, all of the step's together:
  // each drafted row makes the whole step dearer (k_policy::best_prefixes).
  if (!policy_.config().adaptive) return;
  std::vector<planned_sequence*> scored;
  std::vector<std::span<const float>> conf;
  for (auto& ps : p.seqs) {
    if (ps.prefix_chosen || ps.proposal.confidence.empty()) continue;
    scored.push_back(&ps);
    conf.emplace_back(ps.proposal.confidence);
  }
  if (scored.empty()) return;
  const auto prefix = policy_.best_prefixes(conf, static_cast<int>(p.seqs.size()));
  for (size_t i = 0; i < scored.size(); ++i) {
    scored[i]->proposal.truncate(static_cast<size_t>(prefix[i]));
    scored[i]->consulted = scored[i]->proposal.tokens.empty();
    scored[i]->prefix_chosen = true;
  }
}

expected<void> batch_decoder::execute(step_plan& plan, forward_result& out, std::vector<sequence_failure>& failed) {
  // Room for every row first: a sequence whose KV cannot grow fails alone, before any compute.
  kv_block_pool& pool = backend_.kv_pool();
  std::erase_if(plan.seqs, [&](const planned_sequence& ps) {
    sequence& s = *seqs_.at(ps.id).seq;
    if (kv_fault_ && kv_fault_(ps.id)) {
      failed.push_back({ps.id, make_error(errc::internal, "injected KV fault: this sequence's KV could not grow")});
      return true;
    }
    if (pool.reserve(s.kv(), static_cast<uint32_t>(ps.position + ps.rows()))) return false;
    failed.push_back({ps.id, make_error(errc::out_of_memory, "the KV cache could not grow for this sequence (" +
                                                                 std::to_string(pool.free_blocks()) + " free blocks)")});
    return true;
  });
  batch_.clear();
  batch_.want_hidden = plan.want_hidden;
  batch_.urgent = true;  // decode goes before waiting prefill chunks (decode priority)
  std::vector<int32_t> toks;
  for (const auto& ps : plan.seqs) {
    toks.assign(1, ps.input);
    toks.insert(toks.end(), ps.proposal.tokens.begin(), ps.proposal.tokens.end());
    batch_.add_sequence(&seqs_.at(ps.id).seq->kv(), toks.data(), toks.size(), ps.position, !ps.proposal.tokens.empty());
  }
  if (plan.seqs.empty()) {
    out.clear();
    return {};
  }
  return backend_.forward(batch_, out);
}

step_result batch_decoder::apply(const step_plan& plan, const forward_result& out, std::vector<sequence_failure> failed) {
  step_result res;
  res.failed = std::move(failed);
  for (uint64_t id : plan.draft_failed) res.verdicts.push_back({id, 0, 0, true});
  for (uint64_t id : begin_failed_) res.verdicts.push_back({id, 0, 0, true});
  begin_failed_.clear();
  const size_t nv = model_.config().n_vocab;
  const size_t e = model_.config().n_embd;
  size_t row = 0;
  for (const auto& ps : plan.seqs) {
    slot& sl = seqs_.at(ps.id);
    sequence& s = *sl.seq;
    std::vector<token_outcome> outs;
    const auto& prop = ps.proposal;
    const size_t first_row = row;
    const size_t before = s.history().size();
    if (prop.tokens.empty()) {
      outs.push_back(s.advance(out.logits_row(row, nv), model_.vocab()));
      row += 1;
    } else {
      const size_t n_rows = ps.rows();
      int accepted = 0;
      outs = s.advance_speculative(std::span<const float>(out.logits).subspan(row * nv, n_rows * nv), prop,
                                   model_.vocab(), &accepted);
      row += n_rows;
      // Roll back the rejected tail: the KV keeps every history token but the newest. Only the
      // length moves: the blocks stay the sequence's (its worst case was reserved at admission, so
      // the next step's rows fit without allocating). A KV that cannot be cut back is not trusted
      // again: the sequence fails.
      if (!s.finished()) {
        if (auto ok = backend_.kv_pool().set_length(s.kv(), static_cast<uint32_t>(s.history().size() - 1)); !ok)
          res.failed.push_back({s.id(), ok.err()});
      }
      policy_.observe(sl.k, static_cast<int>(prop.tokens.size()), accepted);
      res.verdicts.push_back({s.id(), static_cast<uint32_t>(prop.tokens.size()), static_cast<uint32_t>(accepted)});
      ++spec_.steps;
      spec_.draft_tokens += prop.tokens.size();
      spec_.accepted_tokens += accepted;
      if (spec_.proposed_at.size() < prop.tokens.size()) {
        spec_.proposed_at.resize(prop.tokens.size());
        spec_.accepted_at.resize(prop.tokens.size());
      }
      for (size_t p = 0; p < prop.tokens.size(); ++p) ++spec_.proposed_at[p];
      for (int p = 0; p < accepted; ++p) ++spec_.accepted_at[p];
    }
    std::span<const float> hidden;
    if (plan.want_hidden && !s.finished() && !outs.empty()) {
      const size_t r = first_row + outs.size() - 1;  // the row that chose the newest token
      if (out.hidden.size() >= (r + 1) * e) hidden = std::span<const float>(out.hidden.data() + r * e, e);
    }
    tell_draft(sl, before, ps.consulted || !prop.tokens.empty(), hidden, res);
    for (size_t i = 0; i < outs.size(); ++i) {
      token_outcome& o = outs[i];
      step_event ev;
      ev.id = s.id();
      ev.token = o.token;
      if (s.params().logprobs >= 0 && o.token >= 0) {
        // Outcome i was chosen from row first_row + i (accepted drafts, then the target's token).
        auto lp = logprobs_of(out.logits_row(first_row + i, nv), o.token, s.params().logprobs);
        ev.has_logprob = true;
        ev.logprob = lp.logprob;
        ev.top_ids = std::move(lp.top_ids);
        ev.top_logprobs = std::move(lp.top_logprobs);
      }
      ev.text = std::move(o.text);
      ev.finished = o.finished;
      ev.finish_reason = std::move(o.finish_reason);
      ev.generated = static_cast<uint32_t>(s.generated().size());
      ev.cached_tokens = s.cached_tokens;
      if (i == 0 && !s.prompt_logprobs.empty()) ev.prompt_logprobs = std::exchange(s.prompt_logprobs, {});
      if (ev.finished) res.finished.push_back(ev.id);
      res.events.push_back(std::move(ev));
    }
  }
  for (uint64_t id : res.finished) {
    auto it = seqs_.find(id);
    if (return_kv_ && it != seqs_.end()) {
      finished_kv fk;
      fk.id = id;
      fk.kv = std::move(it->second.seq->kv());
      const auto& h = it->second.seq->history();
      fk.tokens.assign(h.begin(), h.begin() + std::min<size_t>(h.size(), fk.kv.n_tokens));
      fk.kv.n_tokens = static_cast<uint32_t>(fk.tokens.size());
      it->second.seq->kv() = kv_handle{};  // moved out: remove() frees nothing more
      res.returned.push_back(std::move(fk));
    }
    remove(id);
  }
  drop_failed(res);
  return res;
}

void batch_decoder::drop_failed(step_result& res) {
  for (const auto& f : res.failed) {
    if (!return_kv_) {
      remove(f.id);
    } else if (auto kv = detach(f.id)) {
      finished_kv fk;
      fk.id = f.id;
      fk.kv = std::move(*kv);
      res.returned_failed.push_back(std::move(fk));
    }
  }
}

step_result batch_decoder::step() {
  if (seqs_.empty()) return {};
  return run(plan());
}

step_result batch_decoder::run(step_plan p) {
  const auto t0 = std::chrono::steady_clock::now();
  const bool on = draft_ || remote_;
  const bool any_draft = p.any_draft();
  if (any_draft) spec_.draft_ms += p.draft_ms;
  if (on && !p.drafting) ++spec_.gated_steps;
  std::vector<sequence_failure> failed;
  const auto t_verify = std::chrono::steady_clock::now();
  if (auto ok = execute(p, result_, failed); !ok) {
    // The forward failed: every sequence it carried fails with that error; the rest go on.
    for (const auto& ps : p.seqs) failed.push_back({ps.id, ok.err()});
    step_result res;
    res.failed = std::move(failed);
    drop_failed(res);
    return res;
  }
  if (on) observe_step_cost(batch_.rows(), result_.compute_s);
  step_result res = apply(p, result_, std::move(failed));
  if (any_draft) spec_.verify_ms += ms_since(t_verify);
  if (on && policy_.config().adaptive) gate_.observe(any_draft, res.events.size(), p.draft_ms + ms_since(t0), p.draft_ms);
  return res;
}

}  // namespace fw
