// cpu_backend: the host CPU as a device. Owns a persistent kernel thread pool, the KV block pool
// and scratch buffers; reads weights in place from the mapped GGUF file (or packed copies). It
// implements the Llama operations (llama_ops); the layer sequence itself is run_llama_layers'.
// Thread-safety: forward() may be called from several threads (a prefill and a decode actor
// sharing one device); calls are serialized by a priority_gate (decode first, when enabled).
#pragma once

#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>

#include "kernels/cpu/attention.hpp"
#include "kernels/cpu/matmul.hpp"
#include "kernels/cpu/thread_pool.hpp"
#include "runtime/base/priority_gate.hpp"
#include "runtime/device/backend.hpp"
#include "runtime/model/llama_weights.hpp"
#include "runtime/model/arch/llama_ops.hpp"
#include "runtime/model/model_config.hpp"
#include "runtime/device/activation_observer.hpp"
#include "runtime/device/quant_kernel.hpp"

namespace fw {

struct cpu_backend_options {
  int threads = 0;                ///< 0 = hardware concurrency
  uint32_t kv_tokens = 8192;      ///< KV pool capacity in tokens (all sequences together)
  uint32_t kv_block_tokens = 16;  ///< tokens per KV block
  kv_dtype kv_type = kv_dtype::f32;  ///< element type of the cached K and V
  /// Share another backend's kernel threads (a draft model next to its target) instead of
  /// starting a pool of `threads`.
  std::shared_ptr<cpu::thread_pool> shared_threads;
  /// Repack quantized matrices into the kernel path's interleaved layout when it has one (an
  /// owned copy; the mapped originals are released to the page cache). Faster products.
  bool pack_weights = true;
  /// Kernel plugins that take over the matrix products of the weight types they handle (those
  /// matrices stay unpacked, in GGUF layout). First match wins.
  std::vector<std::shared_ptr<quant_kernel>> kernel_plugins;
  /// Sees every product's input rows and each layer's output (calibration, quality reports);
  /// must outlive the backend. Null: none.
  activation_observer* observer = nullptr;
  /// Urgent batches (decode) go before waiting ones (prefill chunks): logical prefill/decode
  /// separation on one device. false: forwards run in arrival order.
  bool decode_priority = true;
  /// Pin the kernel threads (the calling thread included) to these CPUs; empty: no pinning.
  std::vector<int> cores;
};

class cpu_backend final : public backend, private llama_ops {
 public:
  cpu_backend(const model_config& config, const llama_weights& weights, cpu_backend_options opts);

  std::string name() const override { return "cpu"; }
  kv_block_pool& kv_pool() override { return pool_; }
  using backend::forward;
  expected<void> forward(const forward_batch& batch, forward_result& out) override;
  std::vector<kernel_report> kernel_paths() const override;
  std::string summary() const override;

  int threads() const { return threads_->size(); }
  const std::shared_ptr<cpu::thread_pool>& thread_pool() const { return threads_; }

 private:
  const cpu::dot_kernel& kernel_for(ggml_type t) const { return kernels_.at(t); }
  /// y = x w^T for m rows; x rows ldx floats apart, y rows ldy apart (a column range of a wider
  /// row, e.g. k within q | k | v).
  void mm(const cpu::weight_view& w, const float* x, int64_t ldx, int64_t m, float* y, int64_t ldy,
          bool same_x = false);
  /// Floats per row of qkv_: q (q_dim), k and v (kv_dim each).
  int64_t qkv_ld() const { return cfg_.q_dim() + 2 * static_cast<int64_t>(cfg_.kv_dim()); }
  bool packable(const cpu::weight_view& v) const;
  uint8_t* alloc_packed(size_t bytes);  ///< owned by packed_
  void pack_into(cpu::weight_view& v, uint8_t* dst);
  void pack(cpu::weight_view& v);
  /// Packs the parts into one matrix (their rows one after another) and points each part's view
  /// into it; an empty view (data null) when they cannot share one (then nothing is packed).
  cpu::weight_view pack_fused(std::initializer_list<cpu::weight_view*> parts);
  /// The tied output head is the embedding table, whose rows the forward pass still reads.
  bool shares_embedding(const cpu::weight_view& v) const { return v.data == w_.tok_embd.data; }
  void plan_attention(const forward_batch& batch);  ///< once per forward: who attends to what

  // -- llama_ops (runtime/model/arch): the operations of the layer sequence on batch_ --
  void embed_tokens() override;
  void rms_norm(uint32_t layer, llama_norm which) override;
  void project_qkv(uint32_t layer) override;
  void rope_and_store_kv(uint32_t layer) override;
  /// last_layer: the forward's final layer (it records the attention entropy).
  void attention(uint32_t layer, bool last_layer) override;
  void project_out_add(uint32_t layer) override;
  void ffn_gate_up(uint32_t layer) override;
  void ffn_down_add(uint32_t layer) override;
  void output_head() override;

  const model_config& cfg_;
  const llama_weights& w_;
  // The matrices this backend multiplies with: w_'s views, or packed copies of them.
  std::vector<llama_layer_weights> layers_;
  cpu::weight_view output_;
  std::vector<std::unique_ptr<uint8_t[], void (*)(void*)>> packed_;
  struct fused_weights {
    cpu::weight_view qkv;      ///< wq, wk, wv rows in one packed matrix (data null: separate)
    cpu::weight_view gate_up;  ///< w_gate, w_up rows in one packed matrix (data null: separate)
  };
  std::vector<fused_weights> fused_;  ///< per layer
  std::shared_ptr<cpu::thread_pool> threads_;
  kv_block_pool pool_;
  std::map<ggml_type, cpu::dot_kernel> kernels_;
  cpu::attention_fn attend_;
  priority_gate forward_gate_;
  std::vector<std::shared_ptr<quant_kernel>> plugins_;
  activation_observer* observer_ = nullptr;
  void observe(uint32_t layer, activation_site site, const float* x, int64_t ld, int64_t width) {
    if (observer_) observer_->observe(layer, site, x, ld, rows_, width);
  }
  quant_kernel* plugin_for(ggml_type t) const;
  cpu::matmul_scratch mm_scratch_;
  // Activations, [rows][dim].
  std::vector<float> x_, xn_, att_, tmp_;
  std::vector<float> qkv_;      ///< [rows][q | k | v]
  std::vector<float> gate_up_;  ///< [rows][gate | up]; gate becomes silu(gate) * up
  std::vector<float> plugin_x_, plugin_y_;  ///< dense copies for kernel plugins of strided rows
  std::vector<uint8_t> plugin_act_;         ///< activation rows in a v2 plugin's format
  /// Tiles (K and V) of the next attention task fetched ahead while one computes.
  static constexpr size_t next_task_prefetch_tiles = 2;
  struct attention_task {
    uint32_t seq, kv_head;
    size_t begin, end;  ///< queries [begin, end) of attn_
    int n_tiles = 0;    ///< KV tiles its longest query reads
  };
  struct attention_plan {
    std::vector<const float*> q;
    std::vector<float*> out;
    std::vector<int32_t> n_keys;
    std::vector<int64_t> query_slot;  ///< row * n_head + head
    std::vector<float> entropy;
    std::vector<attention_task> tasks;
    std::vector<std::vector<const void*>> k_tiles, v_tiles;  ///< per thread
  } attn_;
  std::vector<int64_t> out_rows_;    ///< the rows that want logits, in order (output_head)
  std::vector<float> head_entropy_;  ///< [rows][heads] of the last layer, rows with logits only
  // The forward in progress (set and cleared by forward(), under forward_gate_).
  const forward_batch* batch_ = nullptr;
  forward_result* out_ = nullptr;
  int64_t rows_ = 0;
  /// Rows from which the per-row work between products (norms, rope and KV writes, silu, residual
  /// adds) is split over the kernel threads; below it the calling thread does it (a pass over
  /// the pool costs more than a few rows' worth).
  static constexpr int64_t parallel_row_ops_min = 4;
  /// f(r) for every row r < n (default: the forward's rows), over the threads from
  /// parallel_row_ops_min rows: one contiguous range of rows a thread (the rows cost alike).
  template <class F>
  void for_rows(F&& f, int64_t n = -1) {
    if (n < 0) n = rows_;
    if (n < parallel_row_ops_min) {
      for (int64_t r = 0; r < n; ++r) f(r);
      return;
    }
    threads_->parallel_for(n, 1, [&](int64_t b, int64_t e, int) {
      for (int64_t r = b; r < e; ++r) f(r);
    }, 1);
  }
};

}  // namespace fw
