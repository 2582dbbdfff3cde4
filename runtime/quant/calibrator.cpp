#include "runtime/quant/calibrator.hpp"

#include <string>

#include "runtime/device/forward_batch.hpp"
#include "runtime/device/forward_result.hpp"

namespace fw {

namespace {

void calibrator_reset(std::vector<std::array<activation_stats, calibrated_sites>>& stats_, uint32_t n_layer,
                      int64_t n_embd, int64_t n_ff, const calibration_run_options& o) {
  stats_.assign(n_layer, {});
  for (auto& l : stats_) {
    l[static_cast<int>(activation_site::qkv_in)] = activation_stats(n_embd, o.ema, o.max_samples, o.gram);
    l[static_cast<int>(activation_site::attn_out_in)] = activation_stats(n_embd, o.ema, o.max_samples, o.gram);
    l[static_cast<int>(activation_site::gate_up_in)] = activation_stats(n_embd, o.ema, o.max_samples, o.gram);
    l[static_cast<int>(activation_site::down_in)] = activation_stats(n_ff, o.ema, o.max_samples, o.gram);
    l[static_cast<int>(activation_site::layer_out)] = activation_stats(n_embd, o.ema, o.max_samples, false);
  }
}

}  // namespace

void calibrator::observe(uint32_t layer, activation_site site, const float* x, int64_t ld, int64_t rows, int64_t width) {
  if (!recording_ || layer >= stats_.size()) return;
  auto& s = stats_[layer][static_cast<int>(site)];
  if (s.width() == width) s.add_batch(x, ld, rows, options_.pool);
}

expected<calibration_summary> calibrator::run(backend& b, uint32_t n_layer, int64_t n_embd, int64_t n_ff,
                                              const std::vector<std::vector<int32_t>>& prompts, uint32_t max_tokens) {
  calibrator_reset(stats_, n_layer, n_embd, n_ff, options_);
  calibration_summary sum;
  const uint32_t per = options_.batch == 0 ? 1 : options_.batch;
  const uint32_t total = static_cast<uint32_t>((prompts.size() + per - 1) / per);
  for (size_t i = 0; i < prompts.size(); ++i)
    if (prompts[i].empty() || prompts[i].size() > max_tokens)
      return make_error(errc::invalid_argument, "calibration query " + std::to_string(i + 1) + " has " +
                                                    std::to_string(prompts[i].size()) + " tokens; the limit is " +
                                                    std::to_string(max_tokens) + " (the context window)");
  auto& pool = b.kv_pool();
  forward_result out;
  for (size_t first = 0; first < prompts.size(); first += per) {
    if (options_.cancel && options_.cancel->load()) return make_error(errc::cancelled, "calibration cancelled");
    const size_t last = std::min(prompts.size(), first + per);
    std::vector<kv_handle> handles(last - first);
    forward_batch batch;
    for (size_t i = first; i < last; ++i) {
      // A default handle is allocated by the forward pass (reserve grows it).
      batch.add_sequence(&handles[i - first], prompts[i].data(), prompts[i].size(), 0, false);
      sum.tokens += prompts[i].size();
    }
    recording_ = true;
    auto ok = b.forward(batch, out);
    recording_ = false;
    for (auto& h : handles) (void)pool.release(h);
    if (!ok) return ok.err();
    ++sum.batches;
    if (options_.progress) options_.progress(sum.batches, total);
  }
  sum.queries = static_cast<uint32_t>(prompts.size());
  return sum;
}

}  // namespace fw
