#include "runtime/device/cpu/cpu_backend.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <thread>

#include <sys/mman.h>

#include "kernels/cpu/ops.hpp"
#include "runtime/model/arch/llama_layers.hpp"
#include "kernels/format/quant_ref.hpp"

namespace fw {
namespace {

int resolve_threads(int requested) {
  if (requested > 0) return requested;
  const unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : static_cast<int>(hw);
}

kv_layout layout_of(const model_config& c, uint32_t block_tokens, kv_dtype dtype) {
  kv_layout l;
  l.dtype = dtype;
  l.n_layer = c.n_layer;
  l.n_head_kv = c.n_head_kv;
  l.head_dim = c.head_dim;
  l.block_tokens = block_tokens;
  return l;
}

}  // namespace

cpu_backend::cpu_backend(const model_config& config, const llama_weights& weights,
                         cpu_backend_options opts)
    : cfg_(config),
      w_(weights),
      threads_(opts.shared_threads ? opts.shared_threads : std::make_shared<cpu::thread_pool>(resolve_threads(opts.threads), opts.cores)),
      pool_(kv_block_pool::next_pool_id(), layout_of(config, opts.kv_block_tokens, opts.kv_type),
            (opts.kv_tokens + opts.kv_block_tokens - 1) / opts.kv_block_tokens),
      forward_gate_(opts.decode_priority) {
  const auto level = cpu::best_simd_level();
  for (ggml_type t : weights.matrix_types()) kernels_.emplace(t, cpu::select_dot_kernel(t, level));
  attend_ = cpu::select_attention(level, static_cast<int>(config.head_dim), static_cast<int>(opts.kv_block_tokens));
  plugins_ = std::move(opts.kernel_plugins);
  observer_ = opts.observer;
  layers_ = weights.layers;
  output_ = weights.output;
  if (opts.pack_weights) {
    fused_.resize(layers_.size());
    for (size_t i = 0; i < layers_.size(); ++i) {
      auto& l = layers_[i];
      // q/k/v and gate/up as one product each: 3 fewer passes over the thread pool per layer
      // (measured +3-5% decode tokens/s at 2 threads, where every pass ends in a barrier).
      fused_[i].qkv = pack_fused({&l.wq, &l.wk, &l.wv});
      fused_[i].gate_up = pack_fused({&l.w_gate, &l.w_up});
      for (auto* v : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) pack(*v);
    }
    pack(output_);
  }
}

quant_kernel* cpu_backend::plugin_for(ggml_type t) const {
  for (const auto& p : plugins_)
    if (p->handles(static_cast<uint32_t>(t))) return p.get();
  return nullptr;
}

bool cpu_backend::packable(const cpu::weight_view& v) const {
  return kernel_for(v.type).pack && !v.packed && v.n >= cpu::packed_group_rows && !plugin_for(v.type);
}

uint8_t* cpu_backend::alloc_packed(size_t bytes) {
  // 2 MiB aligned and advised onto transparent huge pages when large: decode streams every
  // weight once per token, and with 4 KiB pages that is a TLB miss every 4 KiB.
  constexpr size_t huge_page = size_t{2} << 20;
  const size_t align = bytes >= huge_page ? huge_page : 64;
  const size_t alloc = (bytes + align - 1) / align * align;
  auto* dst = static_cast<uint8_t*>(std::aligned_alloc(align, alloc));
  if (!dst) return nullptr;
  if (align == huge_page) (void)::madvise(dst, alloc, MADV_HUGEPAGE);
  packed_.emplace_back(dst, std::free);
  return dst;
}

void cpu_backend::pack_into(cpu::weight_view& v, uint8_t* dst) {
  const size_t bytes = v.row_bytes * static_cast<size_t>(v.n);
  kernel_for(v.type).pack(v.data, v.row_bytes, v.n, v.k, dst);
  // The mapped original is not read again by this backend: give its pages back (they stay in
  // the page cache for whoever maps the file).
  const uintptr_t page = 4096, begin = (reinterpret_cast<uintptr_t>(v.data) + page - 1) & ~(page - 1),
                  end = (reinterpret_cast<uintptr_t>(v.data) + bytes) & ~(page - 1);
  // Only pages of the file mapping: a converted copy (weight_load_options::convert_to) lives in
  // anonymous memory, where MADV_DONTNEED zeroes what the model's views still show.
  if (end > begin && !shares_embedding(v) && w_.in_file_mapping(v.data, bytes))
    ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
  v.data = dst;
  v.packed = true;
}

void cpu_backend::pack(cpu::weight_view& v) {
  if (!packable(v)) return;
  if (uint8_t* dst = alloc_packed(v.row_bytes * static_cast<size_t>(v.n))) pack_into(v, dst);
}

cpu::weight_view cpu_backend::pack_fused(std::initializer_list<cpu::weight_view*> parts) {
  // One packed matrix whose rows are the parts' rows one after another: a single product (one
  // pass over the thread pool instead of one per part) computes them all. Needs the same type and
  // input width, and whole groups of 16 rows per part so each part stays addressable on its own.
  const cpu::weight_view& first = **parts.begin();
  bool ok = true;
  size_t bytes = 0;
  int64_t n = 0;
  for (const auto* p : parts) {
    ok = ok && packable(*p) && p->type == first.type && p->k == first.k && p->row_bytes == first.row_bytes &&
         p->n % cpu::packed_group_rows == 0;
    bytes += p->row_bytes * static_cast<size_t>(p->n);
    n += p->n;
  }
  if (!ok) return {};
  uint8_t* dst = alloc_packed(bytes);
  if (!dst) return {};
  cpu::weight_view fused = first;
  fused.data = dst;
  fused.n = n;
  fused.packed = true;
  for (auto* p : parts) {
    pack_into(*p, dst);  // the part's view now points into the fused matrix
    dst += p->row_bytes * static_cast<size_t>(p->n);
  }
  return fused;
}

std::string cpu_backend::summary() const {
  std::string s = "cpu backend, " + std::to_string(threads()) + " thread" + (threads() == 1 ? "" : "s");
  if (!threads_->cores().empty()) {
    s += " on core";
    s += threads_->cores().size() == 1 ? "" : "s";
    for (int c : threads_->cores()) s += " " + std::to_string(c);
  }
  return s;
}

std::vector<kernel_report> cpu_backend::kernel_paths() const {
  const auto best = cpu::best_simd_level();
  const auto& f = cpu::host_features();
  const auto host = f.has_avx512_vnni()              ? cpu::simd_level::avx512
                    : f.has_avx2() && f.avx_vnni     ? cpu::simd_level::avx2_vnni
                    : f.has_avx2()                   ? cpu::simd_level::avx2
                                                     : cpu::simd_level::scalar;
  std::vector<kernel_report> out;
  for (const auto& entry : kernels_) {
    const ggml_type type = entry.first;  // a plain variable: clang 14 lambdas cannot capture bindings
    const auto& k = entry.second;
    kernel_report r;
    r.weight_type = std::string(type_traits(type).name);
    const bool packed = std::any_of(layers_.begin(), layers_.end(), [&](const llama_layer_weights& l) {
      for (const auto* v : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down})
        if (v->type == type && v->packed) return true;
      return false;
    }) || (output_.type == type && output_.packed);
    r.path = std::string(cpu::to_string(k.level)) + (packed ? " packed" : "") +
             (k.act == cpu::act_format::q8x       ? " (int8 activations)"
              : k.act == cpu::act_format::i8_row  ? " (int8 activations per token)"
              : k.act == cpu::act_format::i16_row ? " (int16 activations per token)"
                                                  : " (f32 activations)");
    if (packed && k.amx_int8) r.path += "; amx int8 tiles from " + std::to_string(cpu::amx::amx_min_rows) + " rows (same results)";
    if (quant_kernel* p = plugin_for(type))
      r.path = "plugin " + p->name() + " " + p->version() + (p->row_split() ? " (v2, on the backend's threads)" : "");
    r.fallback = k.level < host;
    if (k.level == cpu::simd_level::scalar)
      r.note = "scalar fallback: expect a large slowdown";
    else if (k.level < host)
      r.note = std::string("host supports ") + cpu::to_string(host) + " but this type uses " +
               cpu::to_string(k.level) + (best < host ? " (limited by FW_SIMD)" : "");
    out.push_back(std::move(r));
  }
  // Attention has AVX-512 and AVX2 paths (head sizes 32, 64, 96, 128); elsewhere the scalar reference.
  kernel_report a;
  a.weight_type = "attention";
  const char* path = attend_ == &cpu::avx512::attention ? "avx512" : attend_ == &cpu::avx2::attention ? "avx2" : "scalar";
  const bool simd = attend_ != &cpu::ref::attention;
  const kv_dtype dt = pool_.layout().dtype;
  a.path = std::string(path) + (dt == kv_dtype::q8 ? " (q8_0 KV)" : dt == kv_dtype::f16 ? " (f16 KV)" : " (f32 KV)");
  a.fallback = !simd && host > cpu::simd_level::scalar;
  if (a.fallback)
    a.note = std::string("attention has no ") + cpu::to_string(host) + " path for head size " + std::to_string(cfg_.head_dim) +
             " and block size " + std::to_string(pool_.layout().block_tokens) +
             ": the scalar reference runs (slower decode at long contexts)";
  out.push_back(std::move(a));
  return out;
}

void cpu_backend::mm(const cpu::weight_view& w, const float* x, int64_t ldx, int64_t m, float* y, int64_t ldy,
                     bool same_x) {
  if (quant_kernel* p = w.packed ? nullptr : plugin_for(w.type); p && p->row_split()) {
    // A v2 plugin: activations quantized once in the plugin's format, weight rows split over
    // this backend's kernel threads like a built-in product.
    mm_scratch_.act_of = nullptr;
    const uint32_t type = static_cast<uint32_t>(w.type);
    auto spec = p->act_format(type, w.k);
    bool ok = static_cast<bool>(spec);
    const void* act = x;
    size_t stride = static_cast<size_t>(ldx) * sizeof(float);
    if (ok && spec->format != 0) {  // FW_ACT_F32 reads x in place
      plugin_act_.resize(spec->row_bytes * static_cast<size_t>(m));
      stride = spec->row_bytes;
      for (int64_t r = 0; r < m && ok; ++r)
        ok = static_cast<bool>(p->quantize_act(type, x + r * ldx, w.k, w.act_scale, plugin_act_.data() + r * stride));
      act = plugin_act_.data();
    }
    if (ok) {
      std::atomic<bool> failed{false};
      threads_->parallel_for(w.n, 16, [&](int64_t b, int64_t e, int) {
        if (!p->gemm(type, w.data + b * w.row_bytes, w.row_bytes, w.k, e - b, act, stride, m, y + b, ldy)) failed = true;
      });
      if (!failed) return;
    }
    // A failing plugin must not fail the request: the built-in kernel computes the product.
  } else if (p) {
    mm_scratch_.act_of = nullptr;  // the next same_x call must not trust an older quantization
    // The plugin ABI takes dense rows: gather strided inputs, scatter strided outputs.
    const float* xin = x;
    float* yout = y;
    if (ldx != w.k) {
      plugin_x_.resize(static_cast<size_t>(m * w.k));
      for (int64_t r = 0; r < m; ++r) std::memcpy(plugin_x_.data() + r * w.k, x + r * ldx, w.k * sizeof(float));
      xin = plugin_x_.data();
    }
    if (ldy != w.n) plugin_y_.resize(static_cast<size_t>(m * w.n)), yout = plugin_y_.data();
    if (p->gemv(static_cast<uint32_t>(w.type), w.data, w.row_bytes, w.k, w.n, xin, m, yout)) {
      if (ldy != w.n)
        for (int64_t r = 0; r < m; ++r) std::memcpy(y + r * ldy, yout + r * w.n, w.n * sizeof(float));
      return;
    }
    // A failing plugin must not fail the request: fall back to the built-in kernel.
  }
  cpu::matmul(w, kernel_for(w.type), x, ldx, m, y, ldy, *threads_, mm_scratch_, same_x);
}

void cpu_backend::plan_attention(const forward_batch& b) {
  // Queries ordered by (sequence, kv head, row, head of the group); a task answers a run of at
  // most 16 rows' queries of one (sequence, kv head), so each loaded key tile serves them all.
  const int64_t rows = static_cast<int64_t>(b.rows());
  const uint32_t hd = cfg_.head_dim, gqa = cfg_.n_gqa();
  const int64_t qd = cfg_.q_dim();
  const int32_t bt = static_cast<int32_t>(pool_.layout().block_tokens);
  attn_.q.clear(), attn_.out.clear(), attn_.n_keys.clear(), attn_.query_slot.clear(), attn_.tasks.clear();
  std::vector<std::vector<int64_t>> rows_of(b.kv.size());
  for (int64_t r = 0; r < rows; ++r) rows_of[b.seq[r]].push_back(r);
  constexpr size_t rows_per_task = 16;
  for (uint32_t s = 0; s < rows_of.size(); ++s) {
    const auto& rs = rows_of[s];
    for (uint32_t g = 0; g < cfg_.n_head_kv; ++g) {
      for (size_t r0 = 0; r0 < rs.size(); r0 += rows_per_task) {
        attention_task t{s, g, attn_.q.size(), 0, 0};
        int32_t max_keys = 0;
        for (size_t i = r0; i < std::min(rs.size(), r0 + rows_per_task); ++i) {
          const int64_t r = rs[i];
          for (uint32_t j = 0; j < gqa; ++j) {
            const int64_t h = g * gqa + j;
            attn_.q.push_back(qkv_.data() + r * qkv_ld() + h * hd);
            attn_.out.push_back(att_.data() + r * qd + h * hd);
            attn_.n_keys.push_back(b.positions[r] + 1);
            max_keys = std::max(max_keys, b.positions[r] + 1);
            attn_.query_slot.push_back(r * cfg_.n_head + h);
          }
        }
        t.end = attn_.q.size();
        t.n_tiles = (max_keys + bt - 1) / bt;
        attn_.tasks.push_back(t);
      }
    }
  }
  attn_.entropy.resize(attn_.q.size());
  attn_.k_tiles.resize(threads_->size());
  attn_.v_tiles.resize(threads_->size());
}

void cpu_backend::attention(uint32_t layer, bool last_layer) {
  const forward_batch& b = *batch_;
  const uint32_t bt = pool_.layout().block_tokens;
  const float scale = 1.0f / std::sqrt(static_cast<float>(cfg_.head_dim));
  // Each thread takes runs of consecutive tasks, so it knows the next one: while a task computes,
  // the first tiles of the next are fetched. A task's own later tiles are fetched by the kernel
  // (two 16-key chunks ahead), but its first ones would otherwise start cold: in a decode step
  // every task is one (sequence, KV head) of a few tiles, each in its own KV block.
  const size_t tile_bytes = pool_.layout().tile_bytes();
  const kv_dtype dt = pool_.layout().dtype;
  const cpu::kv_elem elem = dt == kv_dtype::q8 ? cpu::kv_elem::q8 : dt == kv_dtype::f16 ? cpu::kv_elem::f16 : cpu::kv_elem::f32;
  auto prefetch_first_tiles = [&](const attention_task& t) {
    const kv_handle& kv = *b.kv[t.seq];
    const size_t n = std::min<size_t>({next_task_prefetch_tiles, static_cast<size_t>(t.n_tiles), kv.blocks.size()});
    for (size_t i = 0; i < n; ++i) {
      const char* k = static_cast<const char*>(pool_.k_data(kv.blocks[i], layer, t.kv_head));
      const char* v = static_cast<const char*>(pool_.v_data(kv.blocks[i], layer, t.kv_head));
      for (size_t off = 0; off < tile_bytes; off += 64) {
        __builtin_prefetch(k + off, 0, 3);
        __builtin_prefetch(v + off, 0, 3);
      }
    }
  };
  auto run_task = [&](const attention_task& t, int thread) {
    const kv_handle& kv = *b.kv[t.seq];
    const int n_tiles = t.n_tiles;
    auto& kt = attn_.k_tiles[thread];
    auto& vt = attn_.v_tiles[thread];
    kt.resize(n_tiles), vt.resize(n_tiles);
    for (int i = 0; i < n_tiles; ++i) {
      kt[i] = pool_.k_data(kv.blocks[i], layer, t.kv_head);
      vt[i] = pool_.v_data(kv.blocks[i], layer, t.kv_head);
    }
    const cpu::kv_tiles tiles{kt.data(), vt.data(), n_tiles, static_cast<int>(bt), static_cast<int>(cfg_.head_dim), elem};
    const cpu::attention_queries qs{static_cast<int>(t.end - t.begin), attn_.q.data() + t.begin,
                                    attn_.out.data() + t.begin, attn_.n_keys.data() + t.begin,
                                    last_layer ? attn_.entropy.data() + t.begin : nullptr};
    attend_(tiles, qs, scale);
  };
  threads_->parallel_for(static_cast<int64_t>(attn_.tasks.size()), 1, [&](int64_t first, int64_t last, int thread) {
    for (int64_t ti = first; ti < last; ++ti) {
      if (ti + 1 < last) prefetch_first_tiles(attn_.tasks[ti + 1]);
      run_task(attn_.tasks[ti], thread);
    }
  });
  if (last_layer) {
    head_entropy_.assign(b.rows() * cfg_.n_head, 0.f);
    for (size_t i = 0; i < attn_.query_slot.size(); ++i) head_entropy_[attn_.query_slot[i]] = attn_.entropy[i];
  }
}

expected<void> cpu_backend::forward(const forward_batch& b, forward_result& out) {
  priority_gate::hold lock(forward_gate_, b.urgent);
  // output_head overwrites every logit: the buffer keeps its elements rather than being resized up
  // from empty, which would first zero it (3 MB in a 16-row step of a 49k vocabulary).
  std::vector<float> logits = std::move(out.logits);
  out.clear();
  // The compute time, after the gate: what prefill_chunk_budget fits.
  struct timer {
    forward_result& out;
    std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
    ~timer() { out.compute_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); }
  } timed{out};
  const int64_t m = static_cast<int64_t>(b.rows());
  if (m == 0) return {};
  const int64_t e = cfg_.n_embd, ff = cfg_.n_ff;
  // Validate rows and make room in every sequence's KV handle before computing anything.
  auto end_pos = reserve_batch(b, pool_, cfg_.n_vocab);
  if (!end_pos) return end_pos.err();

  x_.resize(m * e);
  xn_.resize(m * e);
  qkv_.resize(m * qkv_ld());
  att_.resize(m * cfg_.q_dim());
  gate_up_.resize(m * 2 * ff);
  tmp_.resize(m * e);

  for (const auto& p : plugins_) p->begin_step();  // a reloaded kernel plugin serves from this step on
  out.logits = std::move(logits);
  batch_ = &b;
  out_ = &out;
  rows_ = m;
  plan_attention(b);
  run_llama_layers(*this, cfg_.n_layer, b.n_layers);
  batch_ = nullptr;
  out_ = nullptr;

  return commit_batch(b, pool_, *end_pos);
}

// -- llama_ops over this backend's buffers (batch_, rows_ set by forward) --

void cpu_backend::embed_tokens() {
  const int64_t e = cfg_.n_embd;
  const auto& te = w_.tok_embd;
  for_rows([&](int64_t r) { dequantize_row_ref(te.type, te.data + batch_->tokens[r] * te.row_bytes, x_.data() + r * e, e); });
}

void cpu_backend::rms_norm(uint32_t layer, llama_norm which) {
  const int64_t e = cfg_.n_embd;
  const float* w = which == llama_norm::attention ? layers_[layer].attn_norm : layers_[layer].ffn_norm;
  for_rows([&](int64_t r) { cpu::rms_norm(x_.data() + r * e, w, xn_.data() + r * e, e, cfg_.rms_eps); });
}

void cpu_backend::project_qkv(uint32_t layer) {
  // q, k and v side by side in each row of qkv_ (one fused product, or three into the columns).
  const int64_t e = cfg_.n_embd, qd = cfg_.q_dim(), kvd = cfg_.kv_dim(), ld = qkv_ld();
  const auto& L = layers_[layer];
  const fused_weights* F = layer < fused_.size() ? &fused_[layer] : nullptr;
  observe(layer, activation_site::qkv_in, xn_.data(), e, e);
  if (F && F->qkv.data) {
    mm(F->qkv, xn_.data(), e, rows_, qkv_.data(), ld);
  } else {
    mm(L.wq, xn_.data(), e, rows_, qkv_.data(), ld);
    mm(L.wk, xn_.data(), e, rows_, qkv_.data() + qd, ld, true);  // xn_ unchanged: reuse its 8-bit quantization
    mm(L.wv, xn_.data(), e, rows_, qkv_.data() + qd + kvd, ld, true);
  }
  if (L.qkv_bias) for_rows([&](int64_t r) { cpu::add_inplace(qkv_.data() + r * ld, L.qkv_bias, ld); });
}

void cpu_backend::rope_and_store_kv(uint32_t layer) {
  const int64_t qd = cfg_.q_dim(), kvd = cfg_.kv_dim(), ld = qkv_ld();
  const auto& L = layers_[layer];
  const int hd = static_cast<int>(cfg_.head_dim), n_rot = static_cast<int>(cfg_.n_rot);
  // The adjacent-pair rope without frequency factors has a vector path (the Llama default);
  // other pairings and factor tables rotate with one cos/sin table per row.
  const bool table = cfg_.rope == rope_style::neox || w_.rope_freqs;
  // Rows write distinct KV slots (a position's slot in its sequence's block): they may go in parallel.
  for_rows([&](int64_t r) {
    const int pos = batch_->positions[r];
    float* q = qkv_.data() + r * ld;
    float* k = q + qd;
    const float* v = k + kvd;
    if (L.q_norm) {  // Qwen3: each head of q and k RMS-normalized before rotation
      for (uint32_t h = 0; h < cfg_.n_head; ++h) cpu::rms_norm(q + h * hd, L.q_norm, q + h * hd, hd, cfg_.rms_eps);
      for (uint32_t h = 0; h < cfg_.n_head_kv; ++h) cpu::rms_norm(k + h * hd, L.k_norm, k + h * hd, hd, cfg_.rms_eps);
    }
    if (table) {
      const cpu::rope_table cs(n_rot, pos, cfg_.rope_freq_base, cfg_.rope_freq_scale, w_.rope_freqs);
      const bool neox = cfg_.rope == rope_style::neox;
      cpu::rope_apply(q, cfg_.n_head, hd, n_rot, cs.data(), neox);
      cpu::rope_apply(k, cfg_.n_head_kv, hd, n_rot, cs.data(), neox);
    } else {
      cpu::rope_norm(q, cfg_.n_head, hd, n_rot, pos, cfg_.rope_freq_base, cfg_.rope_freq_scale);
      cpu::rope_norm(k, cfg_.n_head_kv, hd, n_rot, pos, cfg_.rope_freq_base, cfg_.rope_freq_scale);
    }
    const kv_handle& kv = *batch_->kv[batch_->seq[r]];
    for (uint32_t h = 0; h < cfg_.n_head_kv; ++h)
      pool_.write_token(kv, pos, layer, h, k + h * hd, v + h * hd);
  });
}

void cpu_backend::project_out_add(uint32_t layer) {
  const int64_t e = cfg_.n_embd, qd = cfg_.q_dim();
  const auto& L = layers_[layer];
  observe(layer, activation_site::attn_out_in, att_.data(), qd, qd);
  mm(L.wo, att_.data(), qd, rows_, tmp_.data(), e);
  for_rows([&](int64_t r) {
    if (L.wo_bias) cpu::add_inplace(tmp_.data() + r * e, L.wo_bias, e);
    cpu::add_inplace(x_.data() + r * e, tmp_.data() + r * e, e);
  });
}

void cpu_backend::ffn_gate_up(uint32_t layer) {
  // gate and up side by side in each row of gate_up_; silu(gate) * up in place.
  const int64_t e = cfg_.n_embd, ff = cfg_.n_ff, gu = 2 * ff;
  const auto& L = layers_[layer];
  const fused_weights* F = layer < fused_.size() ? &fused_[layer] : nullptr;
  observe(layer, activation_site::gate_up_in, xn_.data(), e, e);
  if (F && F->gate_up.data) {
    mm(F->gate_up, xn_.data(), e, rows_, gate_up_.data(), gu);
  } else {
    mm(L.w_gate, xn_.data(), e, rows_, gate_up_.data(), gu);
    mm(L.w_up, xn_.data(), e, rows_, gate_up_.data() + ff, gu, true);
  }
  for_rows([&](int64_t r) { cpu::silu_mul(gate_up_.data() + r * gu, gate_up_.data() + r * gu + ff, ff); });
}

void cpu_backend::ffn_down_add(uint32_t layer) {
  const int64_t e = cfg_.n_embd, gu = 2 * static_cast<int64_t>(cfg_.n_ff);
  observe(layer, activation_site::down_in, gate_up_.data(), gu, cfg_.n_ff);
  mm(layers_[layer].w_down, gate_up_.data(), gu, rows_, tmp_.data(), e);
  for_rows([&](int64_t r) { cpu::add_inplace(x_.data() + r * e, tmp_.data() + r * e, e); });
  observe(layer, activation_site::layer_out, x_.data(), e, e);
}

void cpu_backend::output_head() {
  // Final norm and output head, only for the rows that want logits.
  const int64_t e = cfg_.n_embd;
  auto& entropy = out_->entropy;
  out_rows_.clear();
  for (int64_t r = 0; r < rows_; ++r) {
    if (!batch_->want_logits[r]) continue;
    float h_sum = 0;
    for (uint32_t h = 0; h < cfg_.n_head; ++h) h_sum += head_entropy_[r * cfg_.n_head + h];
    entropy.push_back(h_sum / cfg_.n_head);
    out_rows_.push_back(r);
  }
  const int64_t n_out = static_cast<int64_t>(out_rows_.size());
  for_rows([&](int64_t i) { cpu::rms_norm(x_.data() + out_rows_[i] * e, w_.output_norm, xn_.data() + i * e, e, cfg_.rms_eps); },
           n_out);
  if (batch_->want_hidden) out_->hidden.assign(xn_.begin(), xn_.begin() + n_out * e);
  out_->logits.resize(n_out * cfg_.n_vocab);
  if (n_out > 0) mm(output_, xn_.data(), e, n_out, out_->logits.data(), cfg_.n_vocab);
  if (w_.output_bias)
    for (int64_t r = 0; r < n_out; ++r) cpu::add_inplace(out_->logits.data() + r * cfg_.n_vocab, w_.output_bias, cfg_.n_vocab);
}

}  // namespace fw
