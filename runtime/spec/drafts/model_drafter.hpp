// model_drafter: a draft model run by flywheel itself: a separate small model of the same
// vocabulary, a re-quantized copy of the target ("self-quant") or the target's first layers
// ("layer-skip").
// - A separate model keeps one KV handle per sequence in its own backend and, after the target's
//   verdict, truncates it to the accepted history instead of recomputing (only tokens it has not
//   seen are fed on the next proposal).
// - Layer-skip runs on the target's backend and reads the target's own KV: its first layers'
//   K/V for the history are exactly what the draft would compute, so it keeps no copy and never
//   catches up (a proposal after a long plain stretch costs what any other does). Its proposals'
//   K/V go into the target's handle past the history and are cut off again before verification. Proposes greedily for greedy targets; otherwise samples
// from its own distribution with the target's sampling parameters and reports q for rejection
// sampling. Stops a proposal early when its own top probability falls below `stop_p`.
// Thread-safety: one caller at a time.
#pragma once

#include <map>
#include <memory>

#include "runtime/device/backend.hpp"
#include "runtime/spec/drafts/drafter.hpp"
#include "runtime/model/model.hpp"
#include "runtime/sample/sampler.hpp"

namespace fw {

class model_drafter final : public drafter {
 public:
  /// The draft model must share the target's vocabulary (checked: same size and tokens).
  /// `device` is the draft's own backend over `draft` (built by the caller: runtime/setup).
  static expected<std::unique_ptr<model_drafter>> create(std::string name, std::shared_ptr<const model> draft,
                                                         const model& target, std::unique_ptr<backend> device,
                                                         float stop_p = 0.0f);
  ~model_drafter() override;

  std::string name() const override { return name_; }
  expected<void> begin(uint64_t seq, std::span<const int32_t> prompt, const sampling_params& params) override;
  expected<draft_proposal> propose(uint64_t seq, std::span<const int32_t> history, int k) override;
  void accept(uint64_t seq, std::span<const int32_t> history) override;
  void end(uint64_t seq) override;

  /// The target's first `layers` layers and output head, over the target's backend and KV.
  static expected<std::unique_ptr<model_drafter>> create_layer_skip(std::shared_ptr<const model> target,
                                                                    backend& target_backend, uint32_t layers,
                                                                    float stop_p = 0.0f);

  void bind_target_kv(uint64_t seq, kv_handle* kv) override;
  /// A separate model drafts ahead; layer-skip writes into the target's KV and cannot.
  bool drafts_ahead() const override { return !shares_target_kv(); }

  backend& device() { return *backend_; }

 private:
  struct seq_state {
    kv_handle kv;                   ///< own KV (separate model)
    kv_handle* target_kv = nullptr;  ///< the target's (layer-skip)
    std::vector<int32_t> in_kv;  ///< tokens whose K/V the handle holds, in order
    std::unique_ptr<sampler> smp;
    bool greedy = true;
  };
  model_drafter(std::string name, std::shared_ptr<const model> m, std::unique_ptr<backend> owned,
                backend* backend, uint32_t exit_layers, float stop_p)
      : name_(std::move(name)), model_(std::move(m)), owned_(std::move(owned)), backend_(backend),
        exit_layers_(exit_layers), stop_p_(stop_p) {}
  bool shares_target_kv() const { return exit_layers_ > 0; }
  void rollback(seq_state& s, std::span<const int32_t> history);
  /// The handle to draft on, holding every history token but the last.
  expected<kv_handle*> prepare_kv(seq_state& s, std::span<const int32_t> history);

  std::string name_;
  std::shared_ptr<const model> model_;
  std::unique_ptr<backend> owned_;  ///< a separate model's backend; null for layer-skip
  backend* backend_;                ///< owned_ or the target's
  uint32_t exit_layers_;                ///< > 0: layer-skip, the target's layers run
  float stop_p_;
  std::map<uint64_t, seq_state> seqs_;
  std::vector<float> logits_;
  forward_result prefill_out_;  ///< catch-up prefills' result (unused)
};

}  // namespace fw
