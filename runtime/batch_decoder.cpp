#include "runtime/batch_decoder.hpp"

#include "runtime/scheduler_policy.hpp"

namespace fw {

batch_decoder::~batch_decoder() { clear(); }

void batch_decoder::add(std::unique_ptr<sequence> s) {
  const uint64_t id = s->id();
  seqs_[id] = std::move(s);
}

bool batch_decoder::remove(uint64_t id) {
  auto it = seqs_.find(id);
  if (it == seqs_.end()) return false;
  (void)backend_.kv_pool().release(it->second->kv());
  seqs_.erase(it);
  return true;
}

void batch_decoder::clear() {
  for (auto& [id, s] : seqs_) (void)backend_.kv_pool().release(s->kv());
  seqs_.clear();
}

expected<std::vector<step_event>> batch_decoder::step() {
  std::vector<step_event> events;
  if (seqs_.empty()) return events;
  std::vector<sequence*> rows;
  if (seqs_.size() <= max_rows_) {
    for (auto& [id, s] : seqs_) rows.push_back(s.get());
  } else {
    std::vector<std::pair<uint64_t, uint32_t>> order;
    for (auto& [id, s] : seqs_) order.emplace_back(id, static_cast<uint32_t>(s->generated().size()));
    for (uint64_t id : scheduler_policy::decode_order(std::move(order), max_rows_)) rows.push_back(seqs_[id].get());
  }
  batch_.clear();
  for (sequence* s : rows) {
    const int32_t tok = s->next_input();
    batch_.add_sequence(&s->kv(), &tok, 1, s->next_position(), false);
  }
  if (auto r = backend_.forward(batch_, logits_); !r) return r.err();
  const size_t nv = model_.config().n_vocab;
  events.reserve(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    sequence* s = rows[i];
    auto out = s->advance(std::span<const float>(logits_.data() + i * nv, nv), model_.vocab());
    step_event e;
    e.id = s->id();
    e.token = out.token;
    e.text = std::move(out.text);
    e.finished = out.finished;
    e.finish_reason = std::move(out.finish_reason);
    e.generated = static_cast<uint32_t>(s->generated().size());
    events.push_back(std::move(e));
  }
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
