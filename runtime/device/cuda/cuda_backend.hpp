// cuda_backend: one NVIDIA GPU as a device (kernels/cuda). Weights are uploaded once at
// construction (quantized formats stay quantized and are decoded in registers); the KV pool
// lives in GPU memory (cuda_kv_storage) in the CPU pool's block layout. The Llama layer sequence
// is run_llama_layers' over this backend's operations, as on the CPU.
//
// Priorities: two lanes, each a CUDA stream with its own activation buffers. Urgent batches
// (decode, verification) run on a high-priority stream, prefill chunks on a low-priority one, so
// the GPU schedules a decode step's kernels ahead of a long prefill's (form 1 of prefill/decode
// separation on one GPU) and both may be in flight at once. The decode lane replays each batch
// shape's forward as a CUDA graph (captured once; per-step data goes in by one copy beforehand).
//
// Thread-safety: forward() may be called from several threads; one forward per lane at a time.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "runtime/device/backend.hpp"
#include "runtime/model/llama_weights.hpp"
#include "runtime/model/model_config.hpp"

namespace fw {

struct cuda_backend_options {
  int device = 0;                 ///< CUDA device ordinal
  uint32_t kv_tokens = 8192;      ///< KV pool capacity in tokens
  uint32_t kv_block_tokens = 16;
  kv_dtype kv_type = kv_dtype::f32;
  bool decode_priority = true;    ///< urgent batches on a high-priority stream; false: one stream
  bool graphs = true;             ///< replay decode steps as CUDA graphs
  /// Q4_0 / Q4_1 / Q8_0 products quantize their activations to int8 blocks, W8A8 products to
  /// int8 groups (with the matrix's static scale where it has one), W4A16 products to int16
  /// rows, and use integer dot products (the CPU's semantics: kernels/cuda/q8_act.hpp,
  /// w8_act.hpp, q16_act.hpp); false: f32 activations.
  bool int8_activations = true;
};

/// What the CUDA runtime says about a device (for banners, `:devices` and pair checks).
struct cuda_device_info {
  int ordinal = 0;
  std::string name;        ///< "NVIDIA H200"
  int cc_major = 0, cc_minor = 0;
  size_t total_bytes = 0, free_bytes = 0;
  std::string runtime;     ///< "13.0"
  std::string driver;      ///< "13.0"
  int multiprocessors = 0;
};

/// How many CUDA devices this process sees, or why none (no driver, no device): the message
/// names the runtime's answer.
expected<int> cuda_device_count();
expected<cuda_device_info> cuda_describe(int ordinal);

class cuda_backend final : public backend {
 public:
  /// Uploads the weights and allocates the KV pool on opts.device. Errors: no such device
  /// (unsupported), too little memory (out_of_memory), a weight type or shape the kernels do not
  /// handle (unsupported, naming it).
  static expected<std::unique_ptr<cuda_backend>> create(const model_config& config, const llama_weights& weights,
                                                        cuda_backend_options opts);
  ~cuda_backend() override;

  std::string name() const override { return "cuda"; }
  kv_block_pool& kv_pool() override { return *pool_; }
  using backend::forward;
  expected<void> forward(const forward_batch& batch, forward_result& out) override;
  std::vector<kernel_report> kernel_paths() const override;
  std::string summary() const override;

  const cuda_device_info& info() const { return info_; }
  /// Forwards replayed from a captured graph / captured so far (for tests and :stats).
  uint64_t graph_replays() const { return graph_replays_; }
  uint64_t graph_captures() const { return graph_captures_; }

  struct impl;  // device buffers and kernels' arguments (cuda_backend.cpp)

 private:
  cuda_backend(const model_config& config, cuda_backend_options opts);
  expected<void> upload(const llama_weights& weights);

  const model_config& cfg_;
  cuda_backend_options opts_;
  cuda_device_info info_;
  std::unique_ptr<kv_block_pool> pool_;
  std::unique_ptr<impl> impl_;
  uint64_t graph_replays_ = 0, graph_captures_ = 0;
};

}  // namespace fw
