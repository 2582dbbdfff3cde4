#include "runtime/batch_decoder.hpp"

#include "runtime/scheduler_policy.hpp"

#include <algorithm>
#include <chrono>

namespace fw {

namespace {
double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

batch_decoder::~batch_decoder() { clear(); }

void batch_decoder::set_speculation(drafter* draft, k_policy policy) {
  draft_ = draft;
  policy_ = policy;
  gate_ = spec_gate{};
}

void batch_decoder::add(std::unique_ptr<sequence> s, std::optional<float> attention_entropy) {
  const uint64_t id = s->id();
  slot sl;
  if (draft_ && draft_->begin(id, s->history(), s->params())) {
    sl.draft = draft_;
    draft_->bind_target_kv(id, &s->kv());
    sl.k = policy_.start(static_cast<int>(s->prompt_size()), attention_entropy);
  } else if (draft_) {
    ++spec_.draft_failures;  // the sequence decodes plainly
  }
  sl.seq = std::move(s);
  seqs_[id] = std::move(sl);
}

bool batch_decoder::remove(uint64_t id) {
  auto it = seqs_.find(id);
  if (it == seqs_.end()) return false;
  if (it->second.draft) it->second.draft->end(id);
  (void)backend_.kv_pool().release(it->second.seq->kv());
  seqs_.erase(it);
  return true;
}

void batch_decoder::clear() {
  while (!seqs_.empty()) remove(seqs_.begin()->first);
}

expected<std::vector<step_event>> batch_decoder::step() {
  std::vector<step_event> events;
  if (seqs_.empty()) return events;
  std::vector<slot*> rows;
  if (seqs_.size() <= max_rows_) {
    for (auto& [id, sl] : seqs_) rows.push_back(&sl);
  } else {
    std::vector<std::pair<uint64_t, uint32_t>> order;
    for (auto& [id, sl] : seqs_) order.emplace_back(id, static_cast<uint32_t>(sl.seq->generated().size()));
    for (uint64_t id : scheduler_policy::decode_order(std::move(order), max_rows_)) rows.push_back(&seqs_[id]);
  }

  // Drafts first (each sequence with its own k), then one target forward over every row.
  std::vector<draft_proposal> proposals(rows.size());
  const auto t_draft = std::chrono::steady_clock::now();
  // With k = auto the gate may hold drafting off (measuring plain decoding, or because it is faster).
  const bool gated = draft_ && policy_.config().adaptive;
  const bool drafting = !gated || gate_.allow_drafts();
  if (!drafting) ++spec_.gated_steps;
  // A scoring drafter whose whole proposal was trimmed away still hears the verdict (the plain
  // step's token), so its acceptance estimates keep learning.
  std::vector<bool> consulted(rows.size(), false);
  for (size_t i = 0; i < rows.size(); ++i) {
    slot& sl = *rows[i];
    if (!sl.draft || !drafting) continue;
    const bool scored = sl.draft->scores_proposals();
    int k = scored ? policy_.k_for_scored(sl.seq->remaining()) : policy_.k_for(sl.k, sl.seq->remaining());
    if (gated && gate_.trial() && !scored) k = std::min(k, 1);  // judged by its cheapest proposal
    if (k <= 0) {
      if (!scored) policy_.observe(sl.k, 0, 0);
      continue;
    }
    auto p = sl.draft->propose(sl.seq->id(), sl.seq->history(), k);
    if (!p) {
      ++spec_.draft_failures;
      continue;
    }
    if (scored && policy_.config().adaptive && !p->confidence.empty()) {
      p->truncate(static_cast<size_t>(policy_.best_prefix(p->confidence)));
      consulted[i] = p->tokens.empty();
    }
    proposals[i] = std::move(*p);
  }
  const bool any_draft = std::any_of(proposals.begin(), proposals.end(), [](const auto& p) { return !p.tokens.empty(); });
  const double step_draft_ms = ms_since(t_draft);
  if (any_draft) spec_.draft_ms += step_draft_ms;

  const auto t_verify = std::chrono::steady_clock::now();
  batch_.clear();
  batch_.hidden_out = std::any_of(rows.begin(), rows.end(), [](const slot* sl) { return sl->draft && sl->draft->wants_hidden(); })
                          ? &hidden_ : nullptr;
  for (size_t i = 0; i < rows.size(); ++i) {
    sequence& s = *rows[i]->seq;
    std::vector<int32_t> toks{s.next_input()};
    toks.insert(toks.end(), proposals[i].tokens.begin(), proposals[i].tokens.end());
    batch_.add_sequence(&s.kv(), toks.data(), toks.size(), s.next_position(), !proposals[i].tokens.empty());
  }
  if (auto r = backend_.forward(batch_, logits_); !r) return r.err();
  const size_t nv = model_.config().n_vocab;
  events.reserve(rows.size());
  size_t row = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    slot& sl = *rows[i];
    sequence& s = *sl.seq;
    std::vector<token_outcome> outs;
    const auto& prop = proposals[i];
    const size_t first_row = row;
    if (prop.tokens.empty()) {
      outs.push_back(s.advance(std::span<const float>(logits_.data() + row * nv, nv), model_.vocab()));
      row += 1;
      if (consulted[i]) sl.draft->accept(s.id(), s.history());
    } else {
      const size_t n_rows = prop.tokens.size() + 1;
      int accepted = 0;
      outs = s.advance_speculative(std::span<const float>(logits_.data() + row * nv, n_rows * nv), prop,
                                   model_.vocab(), &accepted);
      row += n_rows;
      // Roll back the rejected tail: the KV keeps every history token but the newest.
      if (!s.finished()) (void)backend_.kv_pool().truncate(s.kv(), static_cast<uint32_t>(s.history().size() - 1));
      sl.draft->accept(s.id(), s.history());
      policy_.observe(sl.k, static_cast<int>(prop.tokens.size()), accepted);
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
    if (batch_.hidden_out && sl.draft && sl.draft->wants_hidden() && !s.finished() && !outs.empty()) {
      const size_t e = model_.config().n_embd, r = first_row + outs.size() - 1;  // the row that chose the newest token
      if (hidden_.size() >= (r + 1) * e)
        sl.draft->observe_hidden(s.id(), s.history(), std::span<const float>(hidden_.data() + r * e, e));
    }
    for (auto& out : outs) {
      step_event e;
      e.id = s.id();
      e.token = out.token;
      e.text = std::move(out.text);
      e.finished = out.finished;
      e.finish_reason = std::move(out.finish_reason);
      e.generated = static_cast<uint32_t>(s.generated().size());
      events.push_back(std::move(e));
    }
  }
  if (any_draft) spec_.verify_ms += ms_since(t_verify);
  if (gated) gate_.observe(any_draft, events.size(), ms_since(t_draft), step_draft_ms);
  for (const auto& e : events)
    if (e.finished) remove(e.id);
  return events;
}

expected<void> prefill_tokens(backend& b, kv_handle& kv, const int32_t* tokens, size_t n, int32_t start,
                              uint32_t chunk, std::vector<float>& logits) {
  forward_batch batch;
  for (size_t off = 0; off < n; off += chunk) {
    const size_t m = std::min<size_t>(chunk, n - off);
    batch.clear();
    batch.add_sequence(&kv, tokens + off, m, start + static_cast<int32_t>(off), false);
    if (auto r = b.forward(batch, logits); !r) return r.err();
  }
  return {};
}

}  // namespace fw
