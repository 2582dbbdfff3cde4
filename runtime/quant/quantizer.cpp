#include "runtime/quant/quantizer.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <map>
#include <cstdlib>

#include "kernels/format/fw_formats.hpp"
#include "kernels/format/quant_ref.hpp"
#include "runtime/quant/gptq.hpp"
#include "runtime/quant/scale_search.hpp"

namespace fw {
namespace {

std::vector<float> to_f32(const cpu::weight_view& v) {
  std::vector<float> out(static_cast<size_t>(v.k * v.n));
  for (int64_t r = 0; r < v.n; ++r) dequantize_row_ref(v.type, v.data + r * v.row_bytes, out.data() + r * v.k, v.k);
  return out;
}

/// The matrix in `type`, by round-to-nearest, a slice of rows at a time (a vocabulary-sized
/// embedding is never whole in f32).
std::vector<uint8_t> quantize_view(const cpu::weight_view& v, ggml_type type) {
  constexpr int64_t slice = 1024;
  std::vector<uint8_t> out;
  out.reserve(row_bytes(type_traits(type), static_cast<uint64_t>(v.k)) * static_cast<size_t>(v.n));
  for (int64_t r0 = 0; r0 < v.n; r0 += slice) {
    cpu::weight_view part = v;
    part.data = v.data + r0 * v.row_bytes, part.n = std::min(slice, v.n - r0);
    const auto q = quantize_rows(to_f32(part), v.k, type);
    out.insert(out.end(), q.begin(), q.end());
  }
  return out;
}

/// One layer's weights as mutable f32 copies.
struct layer_work {
  std::vector<float> q, k, v, o, gate, up, down, attn_norm, ffn_norm;
};

layer_work load_layer(const llama_layer_weights& l, const model_config& c) {
  layer_work w;
  w.q = to_f32(l.wq), w.k = to_f32(l.wk), w.v = to_f32(l.wv), w.o = to_f32(l.wo);
  w.gate = to_f32(l.w_gate), w.up = to_f32(l.w_up), w.down = to_f32(l.w_down);
  w.attn_norm.assign(l.attn_norm, l.attn_norm + c.n_embd);
  w.ffn_norm.assign(l.ffn_norm, l.ffn_norm + c.n_embd);
  return w;
}

enum site_index { site_down = 0, site_gate_up = 1, site_wo = 2, site_qkv = 3, n_sites = 4 };
constexpr std::array<const char*, n_sites> site_names = {"down", "gate_up", "wo", "qkv"};
constexpr std::array<activation_site, n_sites> site_inputs = {activation_site::down_in, activation_site::gate_up_in,
                                                              activation_site::attn_out_in, activation_site::qkv_in};

product_group group_of(layer_work& w, int site, const model_config& c) {
  switch (site) {
    case site_down: return {{&w.down}, c.n_ff};
    case site_gate_up: return {{&w.gate, &w.up}, c.n_embd};
    case site_wo: return {{&w.o}, c.n_embd};
    default: return {{&w.q, &w.k, &w.v}, c.n_embd};
  }
}

/// Folds 1 / s into what makes the site's input.
void fold_inverse(layer_work& w, int site, const std::vector<float>& s, const model_config& c) {
  if (s.empty()) return;
  switch (site) {
    case site_down:  // input = silu(gate) * up: row j of up
      for (int64_t j = 0; j < c.n_ff; ++j)
        for (int64_t i = 0; i < c.n_embd; ++i) w.up[j * c.n_embd + i] /= s[j];
      break;
    case site_gate_up:
      for (int64_t j = 0; j < c.n_embd; ++j) w.ffn_norm[j] /= s[j];
      break;
    case site_wo: {  // input channel h * hd + d comes from v's row (h / gqa) * hd + d (scales tied per KV head)
      const int64_t hd = c.head_dim, gqa = c.n_gqa();
      for (int64_t r = 0; r < static_cast<int64_t>(c.kv_dim()); ++r) {
        const float sr = s[(r / hd) * gqa * hd + r % hd];
        for (int64_t i = 0; i < c.n_embd; ++i) w.v[r * c.n_embd + i] /= sr;
      }
      break;
    }
    default:
      for (int64_t j = 0; j < c.n_embd; ++j) w.attn_norm[j] /= s[j];
      break;
  }
}

uint64_t group_bytes(const product_group& g, ggml_type t) {
  uint64_t b = 0;
  for (const auto* w : g.weights) b += row_bytes(type_traits(t), g.k) * (w->size() / g.k);
  return b;
}

struct site_choice {
  std::vector<float> s;  ///< empty: no scaling
  std::vector<float> importance;  ///< mean square of the scaled input (4-bit clip search); empty: none
  float act_scale = 0;
  std::vector<std::vector<uint8_t>> q;  ///< the matrices already quantized (GPTQ); empty: quantize_rows
  site_report report;
};

class layer_quantizer {
 public:
  layer_quantizer(const model_config& c, const calibrator* cal, const quantize_options& o, cpu::thread_pool& pool)
      : c_(c), cal_(cal), o_(o), pool_(pool) {}

  /// Chooses the scales of one site for `type` on the current weights of `w` (nothing changed).
  site_choice choose(layer_work& w, uint32_t layer, int site, ggml_type type) {
    site_choice ch;
    product_group g = group_of(w, site, c_);
    ch.report.layer = layer;
    ch.report.site = site_names[site];
    ch.report.type = type;
    ch.report.bytes = group_bytes(g, type);
    if (!cal_) return ch;
    const auto& st = cal_->stats(layer, site_inputs[site]);
    const int64_t rows = st.samples_count();
    if (rows == 0) return ch;
    const bool w8 = type == ggml_type::fw_w8a8;
    const bool static_act = static_scale(layer, site, type);  // what the file's tensor list declared
    auto act_scale = [&](const std::vector<float>& s) -> float {
      if (!static_act) return 0.f;
      float m = 0;
      for (int64_t j = 0; j < g.k; ++j) m = std::max(m, st.max_abs()[j] / (s.empty() ? 1.f : s[j]));
      return m > 0 ? m / 127.f : 0.f;
    };
    error_meter meter(g, st.samples().data(), rows, pool_);
    ch.act_scale = act_scale({});
    ch.report.error_rtn = ch.report.error = meter.error({}, type, ch.act_scale);
    if (!o_.activation_aware) return ch;
    const bool clip = !w8 && type != ggml_type::q8_0;  // 4-bit: AWQ's clip search with every candidate
    auto consider = [&](std::vector<float> s, const char* method, double alpha) {
      if (site == site_wo) tie_to_kv_heads(s, c_.head_dim, c_.n_gqa());
      const float a = act_scale(s);
      const double e = meter.error(s, type, a, clip);
      if (e < ch.report.error) {
        ch.importance = clip ? meter.importance(s) : std::vector<float>{};
        ch.s = std::move(s), ch.act_scale = a;
        ch.report.error = e, ch.report.method = method, ch.report.alpha = alpha;
      }
    };
    if (clip) consider({}, "awq", 0);  // clipping alone
    if (w8 || type == ggml_type::q8_0) {
      if (o_.alpha >= 0) {
        consider(smoothquant_scales(st.max_abs(), g, o_.alpha), "smoothquant", o_.alpha);
      } else {  // alpha search: the migration strength with the least output error
        for (int i = 1; i <= 9; ++i) consider(smoothquant_scales(st.max_abs(), g, i / 10.0), "smoothquant", i / 10.0);
      }
    } else {
      for (int i = 1; i <= 10; ++i) consider(awq_scales(st.mean_abs(), i / 10.0), "awq", i / 10.0);
    }
    if (o_.gptq && gptq_supports(type) && !st.gram().empty()) {
      // GPTQ on the scales just chosen and on none; kept where it measures lower.
      std::vector<std::vector<float>> candidates{ch.s};
      if (!ch.s.empty()) candidates.emplace_back();
      const double alpha = ch.report.alpha;
      for (const auto& s : candidates) {
        auto q = gptq_group(g, st, s, type);
        if (q.empty()) continue;
        const double e = meter.error_of(s, type, q);
        if (e < ch.report.error) {
          ch.q = std::move(q), ch.s = s, ch.importance.clear();
          ch.report.error = e, ch.report.method = s.empty() ? "gptq" : "awq+gptq";
          ch.report.alpha = s.empty() ? 0 : alpha;
        }
      }
    }
    return ch;
  }

  /// The group's matrices, scaled by s, quantized by GPTQ with H of the input divided by s, its
  /// off-diagonal shrunk by gptq_shrink (and the channels in act-order where asked); empty when
  /// H cannot be factored.
  std::vector<std::vector<uint8_t>> gptq_group(const product_group& g, const activation_stats& st,
                                               const std::vector<float>& s, ggml_type type) {
    const auto K = static_cast<size_t>(g.k);
    const auto& gram = st.gram();
    std::vector<double> h(K * K);
    std::vector<float> imp(K);
    const double rows = static_cast<double>(std::max<uint64_t>(st.rows_seen(), 1));
    const double shrink = o_.gptq_shrink;
    for (size_t a = 0; a < K; ++a) {
      const double sa = s.empty() ? 1.0 : s[a];
      for (size_t b = 0; b < K; ++b) h[a * K + b] = gram[a * K + b] / (sa * (s.empty() ? 1.0 : s[b])) * (a == b ? 1.0 : 1.0 - shrink);
      imp[a] = static_cast<float>(h[a * K + a] / rows);
    }
    std::vector<int32_t> order;
    if (o_.gptq_act_order) {  // the most active channels first
      order.resize(K);
      for (size_t i = 0; i < K; ++i) order[i] = static_cast<int32_t>(i);
      std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return imp[a] > imp[b]; });
      std::vector<double> hp(K * K);
      for (size_t i = 0; i < K; ++i)
        for (size_t j = 0; j < K; ++j) hp[i * K + j] = h[order[i] * K + order[j]];
      h = std::move(hp);
    }
    auto u = gptq_inverse_factor(std::move(h), g.k, o_.gptq_damp);
    if (!u) return {};
    std::vector<std::vector<uint8_t>> out;
    for (const auto* m : g.weights) {
      std::vector<float> w = *m;
      scale_columns(w, g.k, s);
      out.push_back(gptq_quantize_rows(w, g.k, type, *u, imp, pool_, order));
    }
    return out;
  }

  /// Whether choose() gives this site a static activation scale (a tensor of its own in the file,
  /// declared before the site is quantized).
  bool static_scale(uint32_t layer, int site, ggml_type type) const {
    if (!cal_ || type != ggml_type::fw_w8a8 || !o_.static_activations) return false;
    const auto& st = cal_->stats(layer, site_inputs[site]);
    if (st.samples_count() == 0) return false;
    return std::any_of(st.max_abs().begin(), st.max_abs().end(), [](float m) { return m > 0; });
  }

  /// Applies a choice: scales the site's weights and folds the inverse.
  void apply(layer_work& w, int site, const site_choice& ch) {
    product_group g = group_of(w, site, c_);
    for (const auto* m : g.weights) scale_columns(const_cast<std::vector<float>&>(*m), g.k, ch.s);
    fold_inverse(w, site, ch.s, c_);
  }

  /// Runs the four sites of a layer in order with the given types; returns the choices.
  std::array<site_choice, n_sites> run(layer_work& w, uint32_t layer, const std::array<ggml_type, n_sites>& types) {
    std::array<site_choice, n_sites> out;
    for (int s = 0; s < n_sites; ++s) {
      out[s] = choose(w, layer, s, types[s]);
      apply(w, s, out[s]);
    }
    return out;
  }

 private:
  const model_config& c_;
  const calibrator* cal_;
  const quantize_options& o_;
  cpu::thread_pool& pool_;
};

/// The tensor name of a layer's matrix for a site's i-th matrix.
std::vector<std::string> site_tensors(uint32_t layer, int site) {
  const std::string p = "blk." + std::to_string(layer) + ".";
  switch (site) {
    case site_down: return {p + "ffn_down"};
    case site_gate_up: return {p + "ffn_gate", p + "ffn_up"};
    case site_wo: return {p + "attn_output"};
    default: return {p + "attn_q", p + "attn_k", p + "attn_v"};
  }
}

std::vector<float>* site_matrix(layer_work& w, int site, size_t i) {
  switch (site) {
    case site_down: return &w.down;
    case site_gate_up: return i == 0 ? &w.gate : &w.up;
    case site_wo: return &w.o;
    default: return i == 0 ? &w.q : i == 1 ? &w.k : &w.v;
  }
}

std::vector<uint8_t> f32_bytes(const std::vector<float>& v) {
  std::vector<uint8_t> b(v.size() * sizeof(float));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// Every 2-D matrix whose rows are whole blocks converted to the scheme's type by round-to-nearest
// (token_embd and output too), everything else copied as it is (norms and biases stay f32).
expected<quantize_result> quantize_per_tensor(const model& src, const quantize_options& o, gguf_writer& out) {
  const ggml_type to = *matrix_type(o.scheme);
  const auto to_traits = type_traits(to);
  quantize_result res;
  for (const auto& [key, value] : src.file().metadata()) {
    if (key.rfind("flywheel.quant.", 0) == 0 || key == "general.file_type" || key == "general.alignment") continue;
    out.add_value(key, value);
  }
  if (auto ft = llama_file_type(o.scheme)) out.add_uint32("general.file_type", *ft);
  const auto& tensors = src.file().tensors();
  auto is_matrix = [&](const gguf_tensor_info& t) {
    return t.ne.size() >= 2 && t.rows() > 1 && t.ne[0] % to_traits.block_size == 0 &&
           t.ne[0] % type_traits(t.type).block_size == 0;
  };
  for (const auto& t : tensors) {
    if (is_matrix(t)) {
      out.declare_tensor(t.name, t.ne, to);
    } else {
      res.tensor_bytes += t.n_bytes;
      out.add_tensor(t.name, t.ne, t.type, {t.data, t.n_bytes});
    }
  }
  if (auto ok = out.begin_data(); !ok) return ok.err();
  uint32_t done = 0;
  for (const auto& t : tensors) {
    if (o.cancel && o.cancel->load()) return make_error(errc::cancelled, "cancelled");
    if (is_matrix(t)) {
      const cpu::weight_view v = t.view();
      auto bytes = quantize_view(v, to);
      res.matrix_params += static_cast<uint64_t>(v.k * v.n);
      res.matrix_bytes += bytes.size();
      res.tensor_bytes += bytes.size();
      if (auto ok = out.fill_tensor(t.name, std::move(bytes)); !ok) return ok.err();
    }
    if (o.progress) o.progress(++done, static_cast<uint32_t>(tensors.size()));
  }
  if (auto ok = out.finish(); !ok) return ok.err();
  return res;
}

}  // namespace

expected<quantize_result> quantize_model(const model& src, const calibrator* cal, const calibration_summary* summary,
                                         const quantize_options& o, cpu::thread_pool& pool, gguf_writer& out) {
  const auto& c = src.config();
  const auto& W = src.weights();
  const bool fw_scheme = is_flywheel_scheme(o.scheme);
  // The layer work (folding, per-site products) is written for Llama's tensors: separate q/k/v,
  // no biases, no q/k norms, q as wide as the residual stream. Other architectures get the plain
  // per-tensor conversion (what llama-quantize does without an importance matrix).
  if (c.architecture != "llama" || c.q_dim() != c.n_embd) {
    if (fw_scheme)
      return make_error(errc::unsupported, "scheme " + std::string(scheme_name(o.scheme)) +
                                               " (calibrated, flywheel's formats) runs the llama architecture; this "
                                               "model is '" + c.architecture + "': use f16, bf16, q8_0, q4_0 or q4_1");
    return quantize_per_tensor(src, o, out);
  }
  if (o.scheme == quant_scheme::w4a16 && !w4a16_type(o.group))
    return make_error(errc::invalid_argument, "--group " + std::to_string(o.group) + ": W4A16 groups are 32, 64 or 128");
  if (fw_scheme && (o.activation_aware || o.scheme == quant_scheme::mixed || o.static_activations) && !cal)
    return make_error(errc::invalid_argument, std::string("scheme ") + std::string(scheme_name(o.scheme)) +
                                                  " is calibrated: give --calib FILE with your queries (or --method rtn "
                                                  "for plain round-to-nearest)");
  if (cal && cal->layers() != c.n_layer)
    return make_error(errc::invalid_argument, "the calibration statistics cover " + std::to_string(cal->layers()) +
                                                  " layers; the model has " + std::to_string(c.n_layer) +
                                                  " (calibrate this model first)");
  // W4A16's group: the largest of 128 / 64 / 32 up to --group that divides the row (576-wide
  // rows take 64 under the default 128).
  auto w4_for = [&](int64_t k) {
    for (int g = o.group; g >= 32; g /= 2)
      if (k % g == 0 && w4a16_type(g)) return *w4a16_type(g);
    return ggml_type::fw_w4a16_g32;
  };
  auto site_k = [&](int site) -> int64_t { return site == site_down ? c.n_ff : c.n_embd; };
  const ggml_type embd = o.embd_type ? *o.embd_type : fw_scheme ? ggml_type::q8_0 : *matrix_type(o.scheme);
  // Every matrix row must be a whole number of the formats' blocks.
  auto check_k = [&](int64_t k, ggml_type t, const std::string& what) -> expected<void> {
    if (k % type_traits(t).block_size != 0)
      return make_error(errc::unsupported, what + ": row length " + std::to_string(k) + " is not a multiple of the " +
                                               std::string(type_traits(t).name) + " block size " +
                                               std::to_string(type_traits(t).block_size));
    return {};
  };
  if (auto ok = check_k(c.n_embd, embd, "token_embd"); !ok) return ok.err();
  // Per layer and site: the type. Mixed: a table, or the budget from measured sensitivity.
  auto type_for = [&](quant_scheme s, int site) {
    return s == quant_scheme::w4a16 ? w4_for(site_k(site)) : *matrix_type(s == quant_scheme::mixed ? quant_scheme::w8a8 : s);
  };
  std::vector<std::array<ggml_type, n_sites>> types(c.n_layer);
  for (auto& t : types)
    for (int s = 0; s < n_sites; ++s) t[s] = type_for(o.scheme, s);
  for (int s = 0; s < n_sites; ++s)
    for (ggml_type t : {types[0][s], o.scheme == quant_scheme::mixed ? w4_for(site_k(s)) : types[0][s]})
      if (auto ok = check_k(site_k(s), t, site_names[s]); !ok) return ok.err();
  layer_quantizer lq(c, cal, o, pool);
  const uint32_t passes = o.scheme == quant_scheme::mixed && o.layer_schemes.empty() ? 2 : 1;
  const uint32_t total_steps = c.n_layer * passes;
  uint32_t steps = 0;
  auto cancelled = [&] { return o.cancel && o.cancel->load(); };
  if (o.scheme == quant_scheme::mixed) {
    if (!o.layer_schemes.empty()) {
      if (o.layer_schemes.size() != c.n_layer)
        return make_error(errc::invalid_argument, "the per-layer table names " + std::to_string(o.layer_schemes.size()) +
                                                      " layers; the model has " + std::to_string(c.n_layer));
      for (uint32_t l = 0; l < c.n_layer; ++l)
        for (int s = 0; s < n_sites; ++s) types[l][s] = type_for(o.layer_schemes[l], s);
    } else {
      if (o.budget_bytes == 0) return make_error(errc::invalid_argument, "--scheme mixed needs --budget-mib N or --layers TABLE");
      // Sensitivity: each site's best error at 8 and at 4 bits, on the unquantized weights,
      // weighed by the share of the residual stream that its path writes (wo's for q|k|v and wo,
      // down's for gate|up and down): relative errors of different products are not comparable,
      // their perturbations of the stream are.
      struct cand { uint32_t layer; int site; double gain_per_byte; uint64_t saved; };
      std::vector<cand> cands;
      uint64_t fixed = 0, total8 = 0;
      for (uint32_t l = 0; l < c.n_layer; ++l) {
        if (cancelled()) return make_error(errc::cancelled, "quantization cancelled");
        layer_work w = load_layer(W.layers[l], c);
        const auto& stream = cal->stats(l, activation_site::layer_out);
        // 1 where the samples do not pair up (no calibration rows).
        auto share_of = [&](const std::vector<float>& m, int64_t k, activation_site in) {
          const auto& x = cal->stats(l, in);
          const int64_t rows = x.samples_count();
          if (rows == 0 || stream.samples_count() != rows || x.width() != k) return 1.0;
          return residual_share(m, k, x.samples().data(), stream.samples().data(), stream.width(), rows, pool);
        };
        const double share_attn = share_of(w.o, c.n_embd, activation_site::attn_out_in);
        const double share_ffn = share_of(w.down, c.n_ff, activation_site::down_in);
        for (int s = 0; s < n_sites; ++s) {
          const auto e8 = lq.choose(w, l, s, ggml_type::fw_w8a8).report;
          const auto e4 = lq.choose(w, l, s, w4_for(site_k(s))).report;
          const uint64_t saved = e8.bytes - e4.bytes;
          const double share = s == site_down || s == site_gate_up ? share_ffn : share_attn;
          total8 += e8.bytes;
          cands.push_back(
              {l, s, share * (e4.error - e8.error) / static_cast<double>(std::max<uint64_t>(saved, 1)), saved});
        }
        if (o.progress) o.progress(++steps, total_steps);
      }
      fixed += row_bytes(type_traits(embd), c.n_embd) * c.n_vocab * (W.tied_output ? 1 : 2);
      fixed += static_cast<uint64_t>(c.n_embd) * 4 * (2 * c.n_layer + 1);
      uint64_t total = fixed + total8;
      std::sort(cands.begin(), cands.end(), [](const cand& a, const cand& b) { return a.gain_per_byte < b.gain_per_byte; });
      uint64_t all4 = fixed + total8;
      for (const auto& x : cands) all4 -= x.saved;
      if (all4 > o.budget_bytes)
        return make_error(errc::invalid_argument, "--budget-mib " + std::to_string(o.budget_bytes >> 20) +
                                                      " is too small: even every layer in W4A16 needs " +
                                                      std::to_string((all4 + (1 << 20) - 1) >> 20) + " MiB");
      for (const auto& x : cands) {
        if (total <= o.budget_bytes) break;
        types[x.layer][x.site] = w4_for(site_k(x.site));
        total -= x.saved;
      }
    }
  }

  // Metadata: the source's, minus its quantization keys, plus ours.
  for (const auto& [key, value] : src.file().metadata()) {
    if (key.rfind("flywheel.quant.", 0) == 0 || key == "general.file_type" || key == "general.alignment") continue;
    out.add_value(key, value);
  }
  if (auto ft = llama_file_type(o.scheme)) out.add_uint32("general.file_type", *ft);
  const std::string method = !fw_scheme ? "rtn"
                             : !o.activation_aware ? "rtn"
                             : o.scheme == quant_scheme::w8a8 ? "smoothquant"
                             : o.scheme == quant_scheme::w4a16 ? (o.gptq ? "awq+gptq" : "awq")
                                                               : (o.gptq ? "smoothquant+awq+gptq" : "smoothquant+awq");
  if (fw_scheme) {
    out.add_uint32(fw_quant_version_key, fw_quant_version);
    out.add_string("flywheel.quant.scheme", std::string(scheme_name(o.scheme)));
    out.add_string("flywheel.quant.method", method);
    if (o.scheme != quant_scheme::w8a8) out.add_uint32("flywheel.quant.max_group_size", static_cast<uint32_t>(o.group));
    if (o.scheme != quant_scheme::w4a16) {
      if (o.alpha >= 0) out.add_float32("flywheel.quant.smoothquant_alpha", static_cast<float>(o.alpha));
      else out.add_string("flywheel.quant.smoothquant_alpha", "searched per product");
      out.add_string("flywheel.quant.activations", o.static_activations ? "static" : "dynamic");
    }
    if (o.gptq) {
      out.add_string("flywheel.quant.gptq_order", o.gptq_act_order ? "act" : "natural");
      out.add_float32("flywheel.quant.gptq_damp", static_cast<float>(o.gptq_damp));
      out.add_float32("flywheel.quant.gptq_shrink", static_cast<float>(o.gptq_shrink));
    }
    if (!o.source_name.empty()) out.add_string("flywheel.quant.source", o.source_name);
    if (summary) {
      out.add_uint32("flywheel.quant.calibration.queries", summary->queries);
      out.add_uint64("flywheel.quant.calibration.tokens", summary->tokens);
      out.add_uint32("flywheel.quant.calibration.batches", summary->batches);
    }
  }

  // Every tensor declared in the source's order (types and sizes are known now), then the file's
  // data section filled layer by layer: the output is never held whole in memory.
  std::map<std::string, ggml_type> layer_types;  // a layer's matrices and norms -> their type
  std::map<std::string, std::string> static_scales;  // matrix -> its act_scale tensor
  for (uint32_t l = 0; l < c.n_layer; ++l) {
    for (int s = 0; s < n_sites; ++s) {
      const ggml_type t = fw_scheme ? types[l][s] : *matrix_type(o.scheme);
      for (const auto& name : site_tensors(l, s)) {
        layer_types[name + ".weight"] = t;
        if (fw_scheme && lq.static_scale(l, s, t)) static_scales[name + ".weight"] = name + ".act_scale";
      }
    }
    const std::string p = "blk." + std::to_string(l) + ".";
    layer_types[p + "attn_norm.weight"] = layer_types[p + "ffn_norm.weight"] = ggml_type::f32;
  }
  enum class made_by { layer, embedding, dequantized, copied };
  auto kind_of = [&](const gguf_tensor_info& t) {
    if (layer_types.count(t.name)) return made_by::layer;
    if (t.name == "token_embd.weight" || t.name == "output.weight") return made_by::embedding;
    const bool matrix2d = t.ne.size() >= 2 && t.rows() > 1;
    if (!matrix2d && t.type != ggml_type::f32 && t.ne[0] % type_traits(t.type).block_size == 0)
      return made_by::dequantized;
    return made_by::copied;
  };
  quantize_result res;
  for (const auto& t : src.file().tensors()) {
    switch (kind_of(t)) {
      case made_by::layer:
        out.declare_tensor(t.name, t.ne, layer_types[t.name]);
        if (auto a = static_scales.find(t.name); a != static_scales.end()) out.declare_tensor(a->second, {1}, ggml_type::f32);
        break;
      case made_by::embedding: out.declare_tensor(t.name, t.ne, embd); break;
      case made_by::dequantized: out.declare_tensor(t.name, t.ne, ggml_type::f32); break;
      case made_by::copied:
        res.tensor_bytes += t.n_bytes;
        out.add_tensor(t.name, t.ne, t.type, {t.data, t.n_bytes});
        break;
    }
  }
  if (auto ok = out.begin_data(); !ok) return ok.err();
  auto fill = [&](const std::string& name, std::vector<uint8_t> bytes) {
    res.tensor_bytes += bytes.size();
    return out.fill_tensor(name, std::move(bytes));
  };
  for (uint32_t l = 0; l < c.n_layer; ++l) {
    if (cancelled()) return make_error(errc::cancelled, "quantization cancelled");
    layer_work w = load_layer(W.layers[l], c);
    auto choices = fw_scheme ? lq.run(w, l, types[l]) : std::array<site_choice, n_sites>{};
    for (int s = 0; s < n_sites; ++s) {
      const ggml_type t = fw_scheme ? types[l][s] : *matrix_type(o.scheme);
      const auto names = site_tensors(l, s);
      for (size_t i = 0; i < names.size(); ++i) {
        const auto* m = site_matrix(w, s, i);
        const int64_t k = s == site_down ? c.n_ff : c.n_embd;
        auto bytes = !choices[s].q.empty()
                         ? std::move(choices[s].q[i])
                         : quantize_rows(*m, k, t, choices[s].importance.empty() ? nullptr : &choices[s].importance);
        res.matrix_params += m->size();
        res.matrix_bytes += bytes.size();
        if (auto ok = fill(names[i] + ".weight", std::move(bytes)); !ok) return ok.err();
        if (auto a = static_scales.find(names[i] + ".weight"); a != static_scales.end()) {
          // Predicted by static_scale; 1/127 only if the maximum underflowed (an input seen as zeros).
          const float scale = choices[s].act_scale > 0 ? choices[s].act_scale : 1.f / 127;
          if (auto ok = fill(a->second, f32_bytes({scale})); !ok) return ok.err();
        }
      }
      if (fw_scheme) {
        choices[s].report.type = t;
        res.sites.push_back(choices[s].report);
      }
    }
    const std::string p = "blk." + std::to_string(l) + ".";
    if (auto ok = fill(p + "attn_norm.weight", f32_bytes(w.attn_norm)); !ok) return ok.err();
    if (auto ok = fill(p + "ffn_norm.weight", f32_bytes(w.ffn_norm)); !ok) return ok.err();
    if (o.progress) o.progress(++steps, total_steps);
  }
  for (const auto& t : src.file().tensors()) {
    const made_by kind = kind_of(t);
    if (kind == made_by::embedding) {
      const cpu::weight_view& v = t.name == "token_embd.weight" ? W.tok_embd : W.output;
      if (auto ok = fill(t.name, quantize_view(v, embd)); !ok) return ok.err();
    } else if (kind == made_by::dequantized) {
      std::vector<float> f(t.n_elements());
      dequantize_row_ref(t.type, t.data, f.data(), static_cast<int64_t>(f.size()));
      if (auto ok = fill(t.name, f32_bytes(f)); !ok) return ok.err();
    }
  }
  if (auto ok = out.finish(); !ok) return ok.err();
  return res;
}

}  // namespace fw
