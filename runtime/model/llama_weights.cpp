#include "runtime/model/llama_weights.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/format/quant_ref.hpp"

namespace fw {
namespace {

std::string shape_str(const std::vector<uint64_t>& ne) {
  std::string s = "[";
  for (size_t i = 0; i < ne.size(); ++i) s += (i ? ", " : "") + std::to_string(ne[i]);
  return s + "]";
}

expected<const gguf_tensor_info*> find(const gguf_file& f, const std::string& name,
                                        std::vector<uint64_t> shape) {
  const gguf_tensor_info* t = f.find_tensor(name);
  if (!t) return make_error(errc::malformed_file, f.path() + ": missing tensor '" + name + "'");
  std::vector<uint64_t> ne = t->ne;
  while (ne.size() > shape.size() && ne.back() == 1) ne.pop_back();
  if (ne != shape)
    return make_error(errc::malformed_file, f.path() + ": tensor '" + name + "' has shape " +
                      shape_str(t->ne) + ", expected " + shape_str(shape));
  return t;
}

}  // namespace

expected<llama_weights> llama_weights::from_gguf(std::shared_ptr<const gguf_file> file,
                                                 const model_config& c, const weight_load_options& options) {
  llama_weights w;
  w.file_ = file;
  const gguf_file& f = *file;
  const uint64_t e = c.n_embd, kv = c.kv_dim(), ff = c.n_ff, nv = c.n_vocab;

  auto matrix = [&](const std::string& name, uint64_t k, uint64_t n) -> expected<cpu::weight_view> {
    auto t = find(f, name, {k, n});
    if (!t) return t.err();
    cpu::weight_view v = (*t)->view();
    // A static activation scale from calibration (fw_w8a8): "<name minus .weight>.act_scale".
    if (name.size() > 7 && name.ends_with(".weight")) {
      if (const auto* a = f.find_tensor(name.substr(0, name.size() - 7) + ".act_scale")) {
        if (a->type != ggml_type::f32 || a->n_elements() != 1)
          return make_error(errc::malformed_file, f.path() + ": tensor '" + a->name + "' must be one f32 value");
        std::memcpy(&v.act_scale, a->data, sizeof(float));
        if (!(v.act_scale > 0) || !std::isfinite(v.act_scale))
          return make_error(errc::malformed_file, f.path() + ": tensor '" + a->name + "' is not a positive scale");
      }
    }
    if (!options.convert_to || *options.convert_to == v.type) return v;
    v.act_scale = 0;  // a converted matrix quantizes its activations its own way
    const auto to = type_traits(*options.convert_to);
    if (v.k % to.block_size != 0)
      return make_error(errc::unsupported, "cannot convert '" + name + "' to " + std::string(to.name) +
                        ": row length " + std::to_string(v.k) + " is not a multiple of " + std::to_string(to.block_size));
    auto out = std::make_unique<std::vector<uint8_t>>(row_bytes(to, v.k) * v.n);
    std::vector<float> row(v.k);
    for (int64_t r = 0; r < v.n; ++r) {
      dequantize_row_ref(v.type, v.data + r * v.row_bytes, row.data(), v.k);
      quantize_row_ref(to.type, row.data(), out->data() + r * row_bytes(to, v.k), v.k);
    }
    v.type = to.type;
    v.row_bytes = row_bytes(to, v.k);
    v.data = out->data();
    w.converted_matrices_.push_back(std::move(out));
    return v;
  };
  // An f32 vector of n values (norm weights, biases), copied when stored in another type.
  auto vec = [&](const std::string& name, uint64_t n) -> expected<const float*> {
    auto t = find(f, name, {n});
    if (!t) return t.err();
    if ((*t)->type == ggml_type::f32) return reinterpret_cast<const float*>((*t)->data);
    auto copy = std::make_unique<std::vector<float>>(n);
    dequantize_row_ref((*t)->type, (*t)->data, copy->data(), static_cast<int64_t>(n));
    w.converted_.push_back(std::move(copy));
    return w.converted_.back()->data();
  };
  auto norm = [&](const std::string& name) { return vec(name, e); };
  auto optional_vec = [&](const std::string& name, uint64_t n) -> expected<const float*> {
    if (!f.find_tensor(name)) return static_cast<const float*>(nullptr);
    return vec(name, n);
  };
  // Rows [r0, r0 + n) of a matrix view: one part of a fused tensor.
  auto rows = [](cpu::weight_view v, int64_t r0, int64_t n) {
    v.data += r0 * v.row_bytes;
    v.n = n;
    return v;
  };
#define FW_TRY(dst, expr)          \
  do {                             \
    auto r_ = (expr);              \
    if (!r_) return r_.err();      \
    dst = *r_;                     \
  } while (0)

  const uint64_t qd = c.q_dim();
  FW_TRY(w.tok_embd, matrix("token_embd.weight", e, nv));
  FW_TRY(w.output_norm, norm("output_norm.weight"));
  if (f.find_tensor("output.weight")) {
    FW_TRY(w.output, matrix("output.weight", e, nv));
  } else {
    w.output = w.tok_embd;
    w.tied_output = true;
  }
  FW_TRY(w.output_bias, optional_vec("output.bias", nv));
  FW_TRY(w.rope_freqs, optional_vec("rope_freqs.weight", c.n_rot / 2));
  w.layers.resize(c.n_layer);
  for (uint32_t i = 0; i < c.n_layer; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    auto& l = w.layers[i];
    FW_TRY(l.attn_norm, norm(p + "attn_norm.weight"));
    if (f.find_tensor(p + "attn_qkv.weight")) {  // Phi-3: one [n_embd, q | k | v] tensor
      cpu::weight_view qkv;
      FW_TRY(qkv, matrix(p + "attn_qkv.weight", e, qd + 2 * kv));
      l.wq = rows(qkv, 0, qd);
      l.wk = rows(qkv, qd, kv);
      l.wv = rows(qkv, qd + kv, kv);
    } else {
      FW_TRY(l.wq, matrix(p + "attn_q.weight", e, qd));
      FW_TRY(l.wk, matrix(p + "attn_k.weight", e, kv));
      FW_TRY(l.wv, matrix(p + "attn_v.weight", e, kv));
    }
    // Biases (Qwen2): one fused vector, or the q, k, v parts a file has (the rest zero).
    if (f.find_tensor(p + "attn_qkv.bias")) {
      FW_TRY(l.qkv_bias, vec(p + "attn_qkv.bias", qd + 2 * kv));
    } else {
      const float *bq = nullptr, *bk = nullptr, *bv = nullptr;
      FW_TRY(bq, optional_vec(p + "attn_q.bias", qd));
      FW_TRY(bk, optional_vec(p + "attn_k.bias", kv));
      FW_TRY(bv, optional_vec(p + "attn_v.bias", kv));
      if (bq || bk || bv) {
        auto b = std::make_unique<std::vector<float>>(qd + 2 * kv, 0.f);
        if (bq) std::copy(bq, bq + qd, b->begin());
        if (bk) std::copy(bk, bk + kv, b->begin() + qd);
        if (bv) std::copy(bv, bv + kv, b->begin() + qd + kv);
        w.converted_.push_back(std::move(b));
        l.qkv_bias = w.converted_.back()->data();
      }
    }
    if (c.qk_norm) {
      FW_TRY(l.q_norm, vec(p + "attn_q_norm.weight", c.head_dim));
      FW_TRY(l.k_norm, vec(p + "attn_k_norm.weight", c.head_dim));
    }
    FW_TRY(l.wo, matrix(p + "attn_output.weight", qd, e));
    FW_TRY(l.wo_bias, optional_vec(p + "attn_output.bias", e));
    FW_TRY(l.ffn_norm, norm(p + "ffn_norm.weight"));
    if (!f.find_tensor(p + "ffn_gate.weight") && f.find_tensor(p + "ffn_up.weight")) {
      // Phi-3: ffn_up is [n_embd, gate | up], the halves of its swiglu.
      cpu::weight_view gu;
      FW_TRY(gu, matrix(p + "ffn_up.weight", e, 2 * ff));
      l.w_gate = rows(gu, 0, ff);
      l.w_up = rows(gu, ff, ff);
    } else {
      FW_TRY(l.w_gate, matrix(p + "ffn_gate.weight", e, ff));
      FW_TRY(l.w_up, matrix(p + "ffn_up.weight", e, ff));
    }
    FW_TRY(l.w_down, matrix(p + "ffn_down.weight", ff, e));
  }
#undef FW_TRY
  return w;
}

std::vector<ggml_type> llama_weights::matrix_types() const {
  std::vector<ggml_type> types;
  auto add = [&](const cpu::weight_view& v) {
    if (std::find(types.begin(), types.end(), v.type) == types.end()) types.push_back(v.type);
  };
  add(tok_embd);
  add(output);
  for (const auto& l : layers)
    for (const auto* v : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) add(*v);
  return types;
}

uint64_t llama_weights::matrix_bytes() const {
  uint64_t total = tied_output ? 0 : output.row_bytes * output.n;
  total += tok_embd.row_bytes * tok_embd.n;
  for (const auto& l : layers)
    for (const auto* v : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down})
      total += v->row_bytes * v->n;
  return total;
}

}  // namespace fw
