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

cpu::weight_view view_of(const gguf_tensor_info& t) {
  const auto traits = type_traits(t.type);
  return cpu::weight_view{t.type, t.data, static_cast<int64_t>(t.ne[0]),
                          static_cast<int64_t>(t.rows()), row_bytes(traits, t.ne[0])};
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
    cpu::weight_view v = view_of(**t);
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
  auto norm = [&](const std::string& name) -> expected<const float*> {
    auto t = find(f, name, {e});
    if (!t) return t.err();
    if ((*t)->type == ggml_type::f32) return reinterpret_cast<const float*>((*t)->data);
    auto copy = std::make_unique<std::vector<float>>(e);
    dequantize_row_ref((*t)->type, (*t)->data, copy->data(), static_cast<int64_t>(e));
    w.converted_.push_back(std::move(copy));
    return w.converted_.back()->data();
  };
#define FW_TRY(dst, expr)          \
  do {                             \
    auto r_ = (expr);              \
    if (!r_) return r_.err();      \
    dst = *r_;                     \
  } while (0)

  FW_TRY(w.tok_embd, matrix("token_embd.weight", e, nv));
  FW_TRY(w.output_norm, norm("output_norm.weight"));
  if (f.find_tensor("output.weight")) {
    FW_TRY(w.output, matrix("output.weight", e, nv));
  } else {
    w.output = w.tok_embd;
    w.tied_output = true;
  }
  w.layers.resize(c.n_layer);
  for (uint32_t i = 0; i < c.n_layer; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    auto& l = w.layers[i];
    FW_TRY(l.attn_norm, norm(p + "attn_norm.weight"));
    FW_TRY(l.wq, matrix(p + "attn_q.weight", e, e));
    FW_TRY(l.wk, matrix(p + "attn_k.weight", e, kv));
    FW_TRY(l.wv, matrix(p + "attn_v.weight", e, kv));
    FW_TRY(l.wo, matrix(p + "attn_output.weight", e, e));
    FW_TRY(l.ffn_norm, norm(p + "ffn_norm.weight"));
    FW_TRY(l.w_gate, matrix(p + "ffn_gate.weight", e, ff));
    FW_TRY(l.w_up, matrix(p + "ffn_up.weight", e, ff));
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
