#include "runtime/spec/drafts/draft_pipeline.hpp"

#include <algorithm>
#include <chrono>

namespace fw {

namespace {
double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

draft_pipeline::~draft_pipeline() { clear(); }

expected<void> draft_pipeline::begin(uint64_t id, std::vector<int32_t> history, const sampling_params& params) {
  if (seqs_.count(id)) end(id);
  if (auto ok = draft_.begin(id, history, params); !ok) return ok.err();
  seq_state s;
  s.history = std::move(history);
  seqs_[id] = std::move(s);
  return {};
}

void draft_pipeline::end(uint64_t id) {
  if (seqs_.erase(id)) draft_.end(id);
}

void draft_pipeline::clear() {
  while (!seqs_.empty()) end(seqs_.begin()->first);
}

draft_answer draft_pipeline::propose(uint64_t id, int k, kv_handle* target_kv) {
  const draft_ask ask{id, k, target_kv};
  return std::move(propose_batch(std::span<const draft_ask>(&ask, 1)).front());
}

std::vector<draft_answer> draft_pipeline::propose_batch(std::span<const draft_ask> asks) {
  std::vector<draft_answer> out(asks.size());
  std::vector<draft_request> reqs;
  std::vector<size_t> drafted;  // the asks in reqs
  for (size_t i = 0; i < asks.size(); ++i) {
    const draft_ask& a = asks[i];
    out[i].id = a.id;
    auto it = seqs_.find(a.id);
    if (it == seqs_.end()) {
      out[i].gone = true;
      continue;
    }
    ++stats_.asks;
    seq_state& s = it->second;
    s.last_k = a.k;
    s.asked = true;
    if (s.ahead && s.ahead->confirmed && s.history.size() == s.ahead->base + s.ahead->assumed.size() &&
        (s.ahead->k < 0 || s.ahead->k == a.k)) {
      ++stats_.hits;
      stats_.hidden_ms += s.ahead->ms;
      out[i].proposal = std::move(s.ahead->next);
      out[i].proposal.truncate(static_cast<size_t>(std::max(0, a.k)));
      s.ahead.reset();
      continue;
    }
    s.ahead.reset();
    if (a.target_kv) draft_.bind_target_kv(a.id, a.target_kv);
    reqs.push_back({a.id, s.history, a.k});
    drafted.push_back(i);
  }
  if (reqs.empty()) return out;
  const auto t0 = std::chrono::steady_clock::now();
  auto props = draft_.propose_batch(reqs);
  stats_.draft_ms += ms_since(t0);
  for (size_t j = 0; j < drafted.size(); ++j) {
    draft_answer& a = out[drafted[j]];
    if (j >= props.size() || !props[j]) a.failed = true;
    else a.proposal = std::move(*props[j]);
  }
  return out;
}

void draft_pipeline::feedback(uint64_t id, std::span<const int32_t> appended, std::span<const float> hidden) {
  auto it = seqs_.find(id);
  if (it == seqs_.end()) return;
  seq_state& s = it->second;
  s.history.insert(s.history.end(), appended.begin(), appended.end());
  if (s.ahead) {
    // The pre-draft stands only if the verdict is exactly what it assumed.
    const auto& a = *s.ahead;
    s.ahead->confirmed = s.history.size() == a.base + a.assumed.size() &&
                         std::equal(a.assumed.begin(), a.assumed.end(), s.history.begin() + static_cast<std::ptrdiff_t>(a.base));
    if (!s.ahead->confirmed) s.ahead.reset();
  }
  draft_.accept(id, s.history);
  if (!hidden.empty() && draft_.wants_hidden()) draft_.observe_hidden(id, s.history, hidden);
}

void draft_pipeline::run_ahead(uint64_t id, const draft_proposal& answered, int k) {
  if (!run_ahead_ || k <= 0) return;
  auto it = seqs_.find(id);
  if (it == seqs_.end()) return;
  seq_state& s = it->second;
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<int32_t> assumed_history = s.history;
  assumed_history.insert(assumed_history.end(), answered.tokens.begin(), answered.tokens.end());
  // One more token than the next step needs: the first is the guess of the target's own token.
  auto prop = draft_.propose(id, assumed_history, k + 1);
  const double ms = ms_since(t0);
  ++stats_.ahead;
  stats_.ahead_ms += ms;
  if (!prop || prop->tokens.size() < 2) return;  // nothing useful: the next ask drafts anew
  ahead_draft a;
  a.base = s.history.size();
  a.assumed = answered.tokens;
  a.assumed.push_back(prop->tokens.front());
  a.next.tokens.assign(prop->tokens.begin() + 1, prop->tokens.end());
  if (prop->probs.size() == prop->tokens.size()) a.next.probs.assign(prop->probs.begin() + 1, prop->probs.end());
  if (prop->confidence.size() == prop->tokens.size())
    a.next.confidence.assign(prop->confidence.begin() + 1, prop->confidence.end());
  a.ms = ms;
  s.ahead = std::move(a);
}

void draft_pipeline::draft_after_verdicts(std::span<const uint64_t> ids) {
  if (!after_verdicts_) return;
  std::vector<draft_request> reqs;
  std::vector<seq_state*> states;
  for (uint64_t id : ids) {
    auto it = seqs_.find(id);
    if (it == seqs_.end() || it->second.last_k <= 0 || !it->second.asked) continue;
    seq_state& s = it->second;
    s.asked = false;
    if (s.ahead && s.ahead->confirmed) continue;  // a run-ahead pre-draft already stands
    reqs.push_back({id, s.history, s.last_k});
    states.push_back(&s);
  }
  if (reqs.empty()) return;
  const auto t0 = std::chrono::steady_clock::now();
  auto props = draft_.propose_batch(reqs);
  const double ms = ms_since(t0) / static_cast<double>(reqs.size());
  for (size_t j = 0; j < reqs.size(); ++j) {
    ++stats_.ahead;
    stats_.ahead_ms += ms;
    // A draft error leaves nothing standing: the ask drafts anew and reports it.
    if (j >= props.size() || !props[j]) continue;
    ahead_draft a;
    a.base = states[j]->history.size();
    a.next = std::move(*props[j]);
    a.ms = ms;
    a.confirmed = true;
    a.k = reqs[j].k;
    states[j]->ahead = std::move(a);
  }
}

}  // namespace fw
