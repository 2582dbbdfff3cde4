#include "runtime/quant/quality_eval.hpp"

#include <algorithm>
#include <cmath>

#include "runtime/device/forward_batch.hpp"
#include "runtime/device/forward_result.hpp"

namespace fw {

void layer_capture::observe(uint32_t layer, activation_site site, const float* x, int64_t ld, int64_t rows,
                            int64_t width) {
  if (site != activation_site::layer_out) return;
  if (layers_.size() <= layer) layers_.resize(layer + 1);
  width_ = width;
  auto& out = layers_[layer];
  out.resize(static_cast<size_t>(rows * width));
  for (int64_t r = 0; r < rows; ++r) std::copy(x + r * ld, x + r * ld + width, out.begin() + r * width);
}

const std::vector<float>& layer_capture::layer(uint32_t l) const {
  static const std::vector<float> none;
  return l < layers_.size() ? layers_[l] : none;
}

namespace {

/// log-softmax of one row into out (double for stable sums).
void log_softmax(const float* logits, uint32_t n, std::vector<double>& out) {
  out.resize(n);
  const float mx = *std::max_element(logits, logits + n);
  double sum = 0;
  for (uint32_t i = 0; i < n; ++i) sum += std::exp(static_cast<double>(logits[i]) - mx);
  const double lse = mx + std::log(sum);
  for (uint32_t i = 0; i < n; ++i) out[i] = logits[i] - lse;
}

uint32_t argmax(const float* v, uint32_t n) { return static_cast<uint32_t>(std::max_element(v, v + n) - v); }

/// Greedy continuation of a prompt, gen tokens.
expected<std::vector<int32_t>> greedy(backend& b, const std::vector<int32_t>& prompt, uint32_t gen, uint32_t n_vocab) {
  kv_handle kv;
  forward_batch batch;
  forward_result out;
  batch.add_sequence(&kv, prompt.data(), prompt.size(), 0, false);
  std::vector<int32_t> toks;
  int32_t pos = static_cast<int32_t>(prompt.size());
  for (uint32_t i = 0; i < gen; ++i) {
    auto ok = b.forward(batch, out);
    if (!ok) {
      (void)b.kv_pool().release(kv);
      return ok.err();
    }
    const int32_t t = static_cast<int32_t>(argmax(out.logits.data(), n_vocab));
    toks.push_back(t);
    batch.clear();
    batch.kv.clear();
    batch.add_sequence(&kv, &t, 1, pos++, false);
  }
  (void)b.kv_pool().release(kv);
  return toks;
}

}  // namespace

expected<quality_report> evaluate_quality(backend& mb, layer_capture& mc, backend& rb, layer_capture& rc,
                                          uint32_t n_layer, uint32_t n_vocab, int32_t bos,
                                          const std::vector<int32_t>& text,
                                          const std::vector<std::vector<int32_t>>& queries, const quality_options& o) {
  quality_report rep;
  rep.layer_error.assign(n_layer, 0.0);
  std::vector<double> err(n_layer, 0.0), norm(n_layer, 0.0);
  const uint32_t per = std::max<uint32_t>(o.ctx, 2) - (bos >= 0 ? 1 : 0);  // text tokens per chunk
  uint32_t chunks = static_cast<uint32_t>(text.size() / per);
  if (chunks == 0 && text.size() >= 2) chunks = 1;
  if (o.max_chunks) chunks = std::min(chunks, o.max_chunks);
  if (chunks == 0) return make_error(errc::invalid_argument, "the evaluation text is too short (fewer than 2 tokens)");
  constexpr uint32_t step_rows = 64;  // rows per forward pass (bounds the logits buffer)
  const uint32_t total_steps = chunks + static_cast<uint32_t>(queries.size());
  uint32_t done = 0;
  double nll = 0, nll_ref = 0, kl = 0;
  uint64_t agree = 0;
  std::vector<double> lp, lq;
  for (uint32_t c = 0; c < chunks; ++c) {
    if (o.cancel && o.cancel->load()) return make_error(errc::cancelled, "evaluation cancelled");
    std::vector<int32_t> chunk;
    if (bos >= 0) chunk.push_back(bos);
    const size_t begin = static_cast<size_t>(c) * per;
    chunk.insert(chunk.end(), text.begin() + begin, text.begin() + std::min(text.size(), begin + per));
    kv_handle kv_m, kv_r;
    forward_result out_m, out_r;
    for (size_t p0 = 0; p0 + 1 < chunk.size(); p0 += step_rows) {
      const size_t n = std::min<size_t>(step_rows, chunk.size() - 1 - p0);
      forward_batch bm, br;
      bm.add_sequence(&kv_m, chunk.data() + p0, n, static_cast<int32_t>(p0), true);
      br.add_sequence(&kv_r, chunk.data() + p0, n, static_cast<int32_t>(p0), true);
      if (auto ok = mb.forward(bm, out_m); !ok) return ok.err();
      if (auto ok = rb.forward(br, out_r); !ok) return ok.err();
      for (uint32_t l = 0; l < n_layer; ++l) {
        const auto& a = mc.layer(l);
        const auto& b = rc.layer(l);
        for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
          const double d = static_cast<double>(a[i]) - b[i];
          err[l] += d * d;
          norm[l] += static_cast<double>(b[i]) * b[i];
        }
      }
      for (size_t i = 0; i < n; ++i) {
        const float* zm = out_m.logits.data() + i * n_vocab;
        const float* zr = out_r.logits.data() + i * n_vocab;
        const int32_t next = chunk[p0 + i + 1];
        log_softmax(zm, n_vocab, lq);
        log_softmax(zr, n_vocab, lp);
        nll -= lq[next];
        nll_ref -= lp[next];
        double k = 0;
        for (uint32_t v = 0; v < n_vocab; ++v) k += std::exp(lp[v]) * (lp[v] - lq[v]);
        kl += k;
        if (k > rep.kl_max) rep.kl_max = k, rep.kl_max_position = static_cast<uint32_t>(p0 + i);
        agree += argmax(zm, n_vocab) == argmax(zr, n_vocab);
        ++rep.tokens;
      }
    }
    (void)mb.kv_pool().release(kv_m);
    (void)rb.kv_pool().release(kv_r);
    if (o.progress) o.progress(++done, total_steps);
  }
  const double nt = static_cast<double>(rep.tokens);
  rep.ppl = std::exp(nll / nt);
  rep.ppl_ref = std::exp(nll_ref / nt);
  rep.kl_mean = kl / nt;
  rep.top1 = static_cast<double>(agree) / nt;
  for (uint32_t l = 0; l < n_layer; ++l) rep.layer_error[l] = norm[l] > 0 ? err[l] / norm[l] : 0;

  double share = 0;
  uint32_t exact = 0;
  for (const auto& q : queries) {
    if (o.cancel && o.cancel->load()) return make_error(errc::cancelled, "evaluation cancelled");
    auto a = greedy(mb, q, o.gen_tokens, n_vocab);
    if (!a) return a.err();
    auto b = greedy(rb, q, o.gen_tokens, n_vocab);
    if (!b) return b.err();
    size_t same = 0;
    while (same < a->size() && (*a)[same] == (*b)[same]) ++same;
    share += static_cast<double>(same) / static_cast<double>(std::max<size_t>(1, a->size()));
    exact += same == a->size();
    ++rep.queries;
    if (o.progress) o.progress(++done, total_steps);
  }
  if (rep.queries) {
    rep.greedy_agreement = share / rep.queries;
    rep.greedy_exact = static_cast<double>(exact) / rep.queries;
  }
  return rep;
}

}  // namespace fw
