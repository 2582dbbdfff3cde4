#include "runtime/spec/drafts/model_drafter.hpp"

#include <algorithm>
#include <cmath>

#include "runtime/device/prefill.hpp"

namespace fw {

expected<std::unique_ptr<model_drafter>> model_drafter::create(std::string name, std::shared_ptr<const model> draft,
                                                               const model& target, std::unique_ptr<backend> device,
                                                               float stop_p) {
  const tokenizer& a = draft->vocab();
  const tokenizer& b = target.vocab();
  if (a.n_vocab() != b.n_vocab())
    return make_error(errc::invalid_argument, "draft model '" + draft->file().path() + "' has " +
                      std::to_string(a.n_vocab()) + " tokens but the target has " + std::to_string(b.n_vocab()) +
                      ": a draft must share the target's vocabulary");
  for (int32_t id = 0; id < a.n_vocab(); ++id)
    if (a.token_text(id) != b.token_text(id))
      return make_error(errc::invalid_argument, "draft model '" + draft->file().path() + "': token " + std::to_string(id) +
                        " is '" + a.token_text(id) + "' but the target's is '" + b.token_text(id) +
                        "': a draft must share the target's vocabulary");
  if (!device) return make_error(errc::invalid_argument, "draft model '" + draft->file().path() + "': no backend");
  backend* own = device.get();
  return std::unique_ptr<model_drafter>(
      new model_drafter(std::move(name), std::move(draft), std::move(device), own, 0, stop_p));
}

expected<std::unique_ptr<model_drafter>> model_drafter::create_layer_skip(std::shared_ptr<const model> target,
                                                                          backend& target_backend,
                                                                          uint32_t layers, float stop_p) {
  const uint32_t n = target->config().n_layer;
  if (layers == 0 || layers >= n)
    return make_error(errc::invalid_argument, "layer-skip draft: " + std::to_string(layers) +
                      " layers; it must run at least one and fewer than the target's " + std::to_string(n));
  return std::unique_ptr<model_drafter>(
      new model_drafter("layer-skip", std::move(target), nullptr, &target_backend, layers, stop_p));
}

model_drafter::~model_drafter() {
  for (auto& [id, s] : seqs_)
    if (!shares_target_kv()) ignore_error("draft model KV", backend_->kv_pool().release(s.kv));
}

expected<void> model_drafter::begin(uint64_t seq, std::span<const int32_t>, const sampling_params& params) {
  seq_state s;
  if (!shares_target_kv()) {
    auto h = backend_->kv_pool().allocate(0);
    if (!h) return make_error(errc::out_of_memory, "draft KV pool exhausted");
    s.kv = std::move(*h);
  }
  s.greedy = params.temperature <= 0.0f;
  auto smp = sampler::make(params, static_cast<int32_t>(model_->config().n_vocab));
  if (!smp) return smp.err();
  s.smp = std::make_unique<sampler>(std::move(*smp));
  end(seq);
  seqs_.emplace(seq, std::move(s));
  return {};
}

void model_drafter::bind_target_kv(uint64_t seq, kv_handle* kv) {
  auto it = seqs_.find(seq);
  if (it != seqs_.end()) it->second.target_kv = kv;
}

void model_drafter::rollback(seq_state& s, std::span<const int32_t> history) {
  if (shares_target_kv()) return;  // the target's handle: the decoder cuts it to the verdict
  size_t common = 0;
  const size_t limit = std::min(s.in_kv.size(), history.size() > 0 ? history.size() - 1 : 0);
  while (common < limit && s.in_kv[common] == history[common]) ++common;
  if (common < s.in_kv.size()) {
    ignore_error("draft model KV", backend_->kv_pool().truncate(s.kv, static_cast<uint32_t>(common)));
    s.in_kv.resize(common);
  }
}

expected<draft_proposal> model_drafter::propose(uint64_t seq, std::span<const int32_t> history, int k) {
  draft_proposal out;
  auto it = seqs_.find(seq);
  if (it == seqs_.end()) return make_error(errc::invalid_argument, "draft: unknown sequence " + std::to_string(seq));
  if (k <= 0 || history.empty()) return out;
  seq_state& s = it->second;
  auto kv = prepare_kv(s, history);
  if (!kv) return kv.err();
  const uint32_t history_kv = (*kv)->n_tokens;
  std::vector<int32_t> hist(history.begin(), history.end());
  const size_t nv = model_->config().n_vocab;
  forward_batch batch;
  batch.n_layers = exit_layers_;
  batch.urgent = true;  // part of a decode step
  for (int i = 0; i < k; ++i) {
    const int32_t feed = hist.back();
    batch.clear();
    batch.add_sequence(*kv, &feed, 1, static_cast<int32_t>(hist.size() - 1), false);
    auto r = backend_->forward(batch, logits_);
    if (!r) {
      if (shares_target_kv()) ignore_error("draft model KV", backend_->kv_pool().set_length(**kv, history_kv));
      return r.err();
    }
    if (!shares_target_kv()) s.in_kv.push_back(feed);
    int32_t tok;
    float top_p;
    if (s.greedy) {
      tok = s.smp->sample(std::span<const float>(logits_.data(), nv), hist);
      if (stop_p_ > 0) {  // the draft's own confidence: softmax probability of its choice
        const float mx = *std::max_element(logits_.begin(), logits_.begin() + nv);
        double z = 0;
        for (size_t t = 0; t < nv; ++t) z += std::exp(logits_[t] - mx);
        top_p = static_cast<float>(std::exp(logits_[tok] - mx) / z);
      } else {
        top_p = 1;
      }
    } else {
      auto q = s.smp->probabilities(std::span<const float>(logits_.data(), nv), hist);
      tok = s.smp->draw(q);
      if (tok < 0) break;
      top_p = *std::max_element(q.begin(), q.end());
      out.probs.push_back(std::move(q));
    }
    if (i > 0 && top_p < stop_p_) {  // not confident: stop proposing here
      if (!s.greedy) out.probs.pop_back();
      break;
    }
    out.tokens.push_back(tok);
    hist.push_back(tok);
  }
  // The target verifies from the history's end: its handle goes back to the length it had (its
  // blocks stay: they are the target's owner's, not the draft's, to free).
  if (shares_target_kv()) ignore_error("draft model KV", backend_->kv_pool().set_length(**kv, history_kv));
  return out;
}

expected<kv_handle*> model_drafter::prepare_kv(seq_state& s, std::span<const int32_t> history) {
  if (shares_target_kv()) {
    if (!s.target_kv) return make_error(errc::internal, "layer-skip draft: the target's KV was not bound");
    if (s.target_kv->n_tokens + 1 != history.size())
      return make_error(errc::internal, "layer-skip draft: the target's KV holds " +
                        std::to_string(s.target_kv->n_tokens) + " tokens of a " + std::to_string(history.size()) +
                        "-token history (it must hold all but the newest)");
    return s.target_kv;
  }
  rollback(s, history);
  // Catch up: every history token but the last goes into the draft's KV.
  const size_t have = s.in_kv.size();
  if (have + 1 < history.size()) {
    if (auto r = prefill_tokens(*backend_, s.kv, history.data() + have, history.size() - 1 - have,
                                static_cast<int32_t>(have), 512, prefill_out_);
        !r)
      return r.err();
    s.in_kv.assign(history.begin(), history.end() - 1);
  }
  return &s.kv;
}

void model_drafter::accept(uint64_t seq, std::span<const int32_t> history) {
  auto it = seqs_.find(seq);
  if (it != seqs_.end()) rollback(it->second, history);
}

void model_drafter::end(uint64_t seq) {
  auto it = seqs_.find(seq);
  if (it == seqs_.end()) return;
  if (!shares_target_kv()) ignore_error("draft model KV", backend_->kv_pool().release(it->second.kv));
  seqs_.erase(it);
}

}  // namespace fw
