// model_drafter: a draft model run by flywheel itself: a separate small model of the same
// vocabulary, a re-quantized copy of the target ("self-quant") or the target's first layers
// ("layer-skip"). It keeps one KV handle per sequence in its own backend and, after the target's
// verdict, truncates it to the accepted history instead of recomputing (only tokens it has not
// seen are fed on the next proposal). Proposes greedily for greedy targets; otherwise samples
// from its own distribution with the target's sampling parameters and reports q for rejection
// sampling. Stops a proposal early when its own top probability falls below `stop_p`.
// Thread-safety: one caller at a time.
#pragma once

#include <map>
#include <memory>

#include "runtime/cpu_backend.hpp"
#include "runtime/drafter.hpp"
#include "runtime/model.hpp"
#include "runtime/sampler.hpp"

namespace fw {

class model_drafter final : public drafter {
 public:
  /// The draft model must share the target's vocabulary (checked: same size and tokens).
  static expected<std::unique_ptr<model_drafter>> create(std::string name, std::shared_ptr<const model> draft,
                                                         const model& target, cpu_backend_options opts,
                                                         float stop_p = 0.0f);
  ~model_drafter() override;

  std::string name() const override { return name_; }
  expected<void> begin(uint64_t seq, std::span<const int32_t> prompt, const sampling_params& params) override;
  expected<draft_proposal> propose(uint64_t seq, std::span<const int32_t> history, int k) override;
  void accept(uint64_t seq, std::span<const int32_t> history) override;
  void end(uint64_t seq) override;

  cpu_backend& device() { return *backend_; }

 private:
  struct seq_state {
    kv_handle kv;
    std::vector<int32_t> in_kv;  ///< tokens whose K/V the handle holds, in order
    std::unique_ptr<sampler> smp;
    bool greedy = true;
  };
  model_drafter(std::string name, std::shared_ptr<const model> m, std::unique_ptr<cpu_backend> b, float stop_p)
      : name_(std::move(name)), model_(std::move(m)), backend_(std::move(b)), stop_p_(stop_p) {}
  void rollback(seq_state& s, std::span<const int32_t> history);

  std::string name_;
  std::shared_ptr<const model> model_;
  std::unique_ptr<cpu_backend> backend_;
  float stop_p_;
  std::map<uint64_t, seq_state> seqs_;
  std::vector<float> logits_;
};

}  // namespace fw
