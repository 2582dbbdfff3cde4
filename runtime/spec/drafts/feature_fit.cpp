#include "runtime/spec/drafts/feature_fit.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "kernels/cpu/matmul.hpp"
#include "kernels/format/quant_ref.hpp"
#include "runtime/base/cholesky.hpp"
#include "runtime/device/prefill.hpp"

namespace fw {

namespace {

constexpr size_t held_out_every = 20;  // every 20th prompt judges the refinement
constexpr int64_t minibatch = 256;

int32_t argmax(const float* x, size_t n) {
  return static_cast<int32_t>(std::max_element(x, x + n) - x);
}

// (g + lambda I) x = c for symmetric positive definite g (n x n, row-major) and m right-hand
// sides (c: n x m); Cholesky in double. false when g is not positive definite.
bool solve_spd(std::vector<double>& g, int64_t n, double lambda, std::vector<double>& c, int64_t m) {
  for (int64_t i = 0; i < n; ++i) g[i * n + i] += lambda;
  if (cholesky_lower(g, n) >= 0) return false;  // g = L L^T, L in the lower triangle
  std::vector<double> col(static_cast<size_t>(n));
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t i = 0; i < n; ++i) col[i] = c[i * m + r];
    for (int64_t i = 0; i < n; ++i) {  // L y = c
      double s = col[i];
      for (int64_t k = 0; k < i; ++k) s -= g[i * n + k] * col[k];
      col[i] = s / g[i * n + i];
    }
    for (int64_t i = n - 1; i >= 0; --i) {  // L^T x = y
      double s = col[i];
      for (int64_t k = i + 1; k < n; ++k) s -= g[k * n + i] * col[k];
      col[i] = s / g[i * n + i];
    }
    for (int64_t i = 0; i < n; ++i) c[i * m + r] = col[i];
  }
  return true;
}

// y (rows_x x rows_w, row-major) = x w^T for f32 matrices stored as rows of k.
void product(const float* w, int64_t rows_w, const float* x, int64_t rows_x, int64_t k, float* y,
             cpu::thread_pool& pool, cpu::matmul_scratch& scratch) {
  static const cpu::dot_kernel kern = cpu::select_dot_kernel(ggml_type::f32, cpu::best_simd_level());
  const cpu::weight_view v{ggml_type::f32, reinterpret_cast<const uint8_t*>(w), k, rows_w,
                           static_cast<size_t>(k) * sizeof(float), false};
  scratch.act_of = nullptr;
  cpu::matmul(v, kern, x, k, rows_x, y, rows_w, pool, scratch);
}

void transpose(const float* a, int64_t rows, int64_t cols, float* out) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) out[c * rows + r] = a[r * cols + c];
}

// Training pairs, row-major: inputs (3 n_embd each), next states (n_embd each; kept for the
// training pairs only: the regression's targets) and labels (the target's next token).
struct pair_set {
  std::vector<float> inputs, next;
  std::vector<int32_t> label;
};

// Greedy answers, up to options.batch prompts per forward.
expected<void> answer_prompts(const model& target, backend& b, const std::vector<std::vector<int32_t>>& prompts,
                              const feature_fit_options& options, bool hold_out, pair_set& train, pair_set& held,
                              std::vector<uint64_t>& freq) {
  const model_config& cfg = target.config();
  const int64_t e = cfg.n_embd;
  const size_t nv = cfg.n_vocab;
  kv_block_pool& pool = b.kv_pool();
  struct live {
    size_t prompt;
    kv_handle kv;
    std::vector<float> state;  ///< the state that chose `tok` (empty before the first step)
    int32_t tok = -1;          ///< the newest token (fed next)
    int produced = 0;          ///< answer tokens so far, tok included
  };
  std::vector<live> active;
  forward_result result;
  const std::vector<float>& logits = result.logits;
  const std::vector<float>& hidden = result.hidden;
  std::vector<float> emb(static_cast<size_t>(e)), in(static_cast<size_t>(feature_inputs * e));
  forward_batch batch;
  batch.want_hidden = true;
  size_t next_prompt = 0, done = 0;
  auto finish = [&](live& s) {
    ignore_error("fit-draft", pool.release(s.kv));
    ++done;
    if (options.progress) options.progress(done, prompts.size());
  };
  auto fail = [&](error err) -> expected<void> {
    for (auto& s : active) ignore_error("fit-draft", pool.release(s.kv));
    return err;
  };
  const uint32_t width = std::max<uint32_t>(1, options.batch);
  while (next_prompt < prompts.size() || !active.empty()) {
    // Join: prefill new prompts (all but their last token) while the batch and the pool have room.
    while (next_prompt < prompts.size() && active.size() < width) {
      const auto& p = prompts[next_prompt];
      if (p.empty()) {
        ++next_prompt, ++done;
        continue;
      }
      // Room for the whole answer up front, so running answers never run out of blocks.
      auto h = pool.allocate(static_cast<uint32_t>(p.size() + options.max_tokens));
      if (!h && !active.empty()) break;  // wait for a running answer to end
      if (!h) return fail(make_error(errc::out_of_memory, "fit-draft: KV cache pool exhausted (a prompt of " +
                                     std::to_string(p.size()) + " tokens plus its answer does not fit)"));
      live s{next_prompt++, std::move(*h), {}, p.back(), 0};
      if (p.size() > 1)
        if (auto r = prefill_tokens(b, s.kv, p.data(), p.size() - 1, 0, 512, result); !r) {
          ignore_error("fit-draft", pool.release(s.kv));
          return fail(r.err());
        }
      active.push_back(std::move(s));
    }
    batch.clear();
    for (auto& s : active)
      batch.add_sequence(&s.kv, &s.tok, 1, static_cast<int32_t>(prompts[s.prompt].size()) - 1 + s.produced, false);
    if (auto r = b.forward(batch, result); !r) return fail(r.err());
    if (hidden.size() != active.size() * static_cast<size_t>(e))
      return fail(make_error(errc::unsupported, "fit-draft: the backend returns no hidden states"));
    std::vector<live> still;
    for (size_t i = 0; i < active.size(); ++i) {
      live& s = active[i];
      const float* hid = hidden.data() + i * e;
      const int32_t next = argmax(logits.data() + i * nv, nv);
      if (!s.state.empty()) {  // a pair: (state that chose tok, tok) -> the state at tok's position
        embed_token(target, s.tok, emb.data());
        feature_inputs_of(s.state.data(), emb.data(), e, in.data());
        const bool held_out = hold_out && s.prompt % held_out_every == held_out_every - 1;
        pair_set& out = held_out ? held : train;
        out.inputs.insert(out.inputs.end(), in.begin(), in.end());
        if (!held_out) out.next.insert(out.next.end(), hid, hid + e);
        out.label.push_back(next);
      }
      s.state.assign(hid, hid + e);
      s.tok = next;
      ++s.produced;
      // The answer ends at end-of-generation or at max_tokens (its last token is not fed).
      if (target.vocab().is_eog(next)) {
        finish(s);
        continue;
      }
      ++freq[static_cast<size_t>(next)];
      if (s.produced >= options.max_tokens) {
        finish(s);
        continue;
      }
      still.push_back(std::move(s));
    }
    active = std::move(still);
  }
  return {};
}

// Next-token accuracy of map w over pairs (labels outside the candidates count as misses).
double accuracy(const std::vector<float>& w, const std::vector<float>& head, const std::vector<int32_t>& cand,
                const std::vector<float>& inputs, const std::vector<int32_t>& label, int64_t e,
                cpu::thread_pool& pool, cpu::matmul_scratch& scratch) {
  const int64_t in = feature_inputs * e, nc = static_cast<int64_t>(cand.size()), n = static_cast<int64_t>(label.size());
  if (n == 0) return 0;
  std::vector<float> h, lg;
  size_t hits = 0;
  for (int64_t r0 = 0; r0 < n; r0 += minibatch) {
    const int64_t m = std::min(minibatch, n - r0);
    h.resize(static_cast<size_t>(m * e));
    lg.resize(static_cast<size_t>(m * nc));
    product(w.data(), e, inputs.data() + r0 * in, m, in, h.data(), pool, scratch);
    product(head.data(), nc, h.data(), m, e, lg.data(), pool, scratch);
    for (int64_t r = 0; r < m; ++r) hits += cand[argmax(lg.data() + r * nc, nc)] == label[r0 + r];
  }
  return static_cast<double>(hits) / static_cast<double>(n);
}

// Minibatch Adam on the cross-entropy of the label over the candidates, `epochs` passes; after
// each pass `judge` sees the map.
void refine(std::vector<float>& w, const std::vector<float>& head, const std::vector<int32_t>& index_of,
            const std::vector<float>& inputs, const std::vector<int32_t>& label, int64_t e, int epochs, double lr,
            cpu::thread_pool& pool, const std::function<void(int, const std::vector<float>&)>& judge) {
  const int64_t in = feature_inputs * e, nc = static_cast<int64_t>(head.size()) / e;
  const int64_t n = static_cast<int64_t>(label.size());
  cpu::matmul_scratch scratch;
  std::vector<float> head_t(head.size());
  transpose(head.data(), nc, e, head_t.data());
  std::vector<float> m1(w.size(), 0.0f), m2(w.size(), 0.0f), grad(w.size());
  std::vector<float> x(static_cast<size_t>(minibatch * in)), x_t(x.size()), h(static_cast<size_t>(minibatch * e));
  std::vector<float> lg(static_cast<size_t>(minibatch * nc)), dh(h.size()), dh_t(h.size());
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 rng(20261129);
  const double b1 = 0.9, b2 = 0.999;
  int64_t t = 0;
  for (int ep = 1; ep <= epochs; ++ep) {
    std::shuffle(order.begin(), order.end(), rng);
    for (int64_t r0 = 0; r0 + minibatch <= n; r0 += minibatch) {
      for (int64_t r = 0; r < minibatch; ++r)
        std::copy_n(inputs.begin() + order[r0 + r] * in, in, x.begin() + r * in);
      product(w.data(), e, x.data(), minibatch, in, h.data(), pool, scratch);
      product(head.data(), nc, h.data(), minibatch, e, lg.data(), pool, scratch);
      // d loss / d logits = softmax - one-hot, averaged over the minibatch (no label: no gradient).
      for (int64_t r = 0; r < minibatch; ++r) {
        float* l = lg.data() + r * nc;
        const int32_t y = index_of[static_cast<size_t>(label[order[r0 + r]])];
        if (y < 0) {
          std::fill_n(l, nc, 0.0f);
          continue;
        }
        const float mx = *std::max_element(l, l + nc);
        double z = 0;
        for (int64_t c = 0; c < nc; ++c) z += (l[c] = std::exp(l[c] - mx));
        const float inv = static_cast<float>(1.0 / (z * minibatch));
        for (int64_t c = 0; c < nc; ++c) l[c] *= inv;
        l[y] -= 1.0f / minibatch;
      }
      product(head_t.data(), e, lg.data(), minibatch, nc, dh.data(), pool, scratch);  // d loss / d h
      transpose(dh.data(), minibatch, e, dh_t.data());
      transpose(x.data(), minibatch, in, x_t.data());
      product(x_t.data(), in, dh_t.data(), e, minibatch, grad.data(), pool, scratch);  // [e][in]
      ++t;
      const double c1 = 1 - std::pow(b1, static_cast<double>(t)), c2 = 1 - std::pow(b2, static_cast<double>(t));
      for (size_t i = 0; i < w.size(); ++i) {
        const float g = grad[i];
        m1[i] = static_cast<float>(b1 * m1[i] + (1 - b1) * g);
        m2[i] = static_cast<float>(b2 * m2[i] + (1 - b2) * g * g);
        w[i] -= static_cast<float>(lr * (m1[i] / c1) / (std::sqrt(m2[i] / c2) + 1e-8));
      }
    }
    judge(ep, w);
  }
}

}  // namespace

expected<feature_map> fit_feature_map(const model& target, backend& b, cpu::thread_pool& pool,
                                      const std::vector<std::vector<int32_t>>& prompts,
                                      const feature_fit_options& options, feature_fit_report* report) {
  const model_config& cfg = target.config();
  const int64_t e = cfg.n_embd, in = feature_inputs * e;
  const size_t nv = cfg.n_vocab;
  const bool hold_out = options.epochs > 0 && prompts.size() >= held_out_every;
  pair_set train, test;
  std::vector<uint64_t> freq(nv, 0);
  if (auto r = answer_prompts(target, b, prompts, options, hold_out, train, test, freq); !r) return r.err();
  std::vector<float>& train_in = train.inputs;
  std::vector<float>& train_next = train.next;
  const std::vector<float>& test_in = test.inputs;
  const std::vector<int32_t>& train_label = train.label;
  const std::vector<int32_t>& test_label = test.label;
  const int64_t n = static_cast<int64_t>(train_label.size());
  if (n < in)
    return make_error(errc::invalid_argument, "fit-draft: " + std::to_string(n) + " training pairs from " +
                      std::to_string(prompts.size()) + " prompts; need at least " + std::to_string(in) +
                      " (more or longer prompts, or a larger --max-tokens)");

  // Normal equations of the ridge regression: (A^T A + lambda I) X = A^T B, A: n x 3e, B: n x e.
  std::vector<float> w(static_cast<size_t>(e * in));
  {
    std::vector<float> at(static_cast<size_t>(in * n)), bt(static_cast<size_t>(e * n));
    transpose(train_in.data(), n, in, at.data());
    transpose(train_next.data(), n, e, bt.data());
    train_next = {};
    cpu::matmul_scratch scratch;
    std::vector<float> gf(static_cast<size_t>(in * in)), cf(static_cast<size_t>(e * in));
    product(at.data(), in, at.data(), in, n, gf.data(), pool, scratch);  // gf[j][i] = sum_s a_sj a_si
    product(at.data(), in, bt.data(), e, n, cf.data(), pool, scratch);   // cf[j][i] = sum_s b_sj a_si
    std::vector<double> g(gf.begin(), gf.end()), c(static_cast<size_t>(in * e));
    for (int64_t o = 0; o < e; ++o)
      for (int64_t j = 0; j < in; ++j) c[j * e + o] = cf[o * in + j];
    if (!solve_spd(g, in, options.ridge * static_cast<double>(n) / 10000.0 + 1e-6, c, e))
      return make_error(errc::internal, "fit-draft: the normal equations are singular (raise the ridge)");
    for (int64_t o = 0; o < e; ++o)
      for (int64_t j = 0; j < in; ++j) w[o * in + j] = static_cast<float>(c[j * e + o]);
  }

  feature_map m;
  m.n_embd = static_cast<uint32_t>(e);
  m.n_vocab = static_cast<uint32_t>(nv);
  m.target_name = cfg.name;
  m.samples = static_cast<uint32_t>(n);
  std::vector<int32_t> order;
  for (size_t t = 0; t < nv; ++t)
    if (freq[t] > 0) order.push_back(static_cast<int32_t>(t));
  std::stable_sort(order.begin(), order.end(), [&](int32_t x, int32_t y) { return freq[x] > freq[y]; });
  if (order.size() > options.vocab_size) order.resize(options.vocab_size);
  m.vocab = std::move(order);

  feature_fit_report rep;
  rep.pairs = static_cast<uint32_t>(n);
  rep.held_out = static_cast<uint32_t>(test_label.size());
  if (hold_out && !test_label.empty() && !m.vocab.empty()) {
    // The head's candidate rows (what the draft reads the state with) and each token's row among them.
    const auto& out = target.weights().output;
    std::vector<float> head(m.vocab.size() * static_cast<size_t>(e));
    std::vector<int32_t> index_of(nv, -1);
    for (size_t i = 0; i < m.vocab.size(); ++i) {
      dequantize_row_ref(out.type, out.data + static_cast<size_t>(m.vocab[i]) * out.row_bytes, head.data() + i * e, e);
      index_of[static_cast<size_t>(m.vocab[i])] = static_cast<int32_t>(i);
    }
    cpu::matmul_scratch scratch;
    rep.ridge_accuracy = rep.accuracy = accuracy(w, head, m.vocab, test_in, test_label, e, pool, scratch);
    std::vector<float> best = w;
    refine(w, head, index_of, train_in, train_label, e, options.epochs, options.learning_rate, pool,
           [&](int epoch, const std::vector<float>& cur) {
             const double a = accuracy(cur, head, m.vocab, test_in, test_label, e, pool, scratch);
             if (a > rep.accuracy) rep.accuracy = a, rep.epochs_kept = epoch, best = cur;
           });
    w = std::move(best);
  }
  m.weights = std::move(w);
  if (report) *report = rep;
  return m;
}

}  // namespace fw
