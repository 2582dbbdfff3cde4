#include "runtime/plugin/kinds/live_quant_kernel.hpp"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <vector>

#include "runtime/base/log.hpp"

namespace fw {
namespace {

class live_quant_kernel final : public quant_kernel {
 public:
  live_quant_kernel(std::shared_ptr<plugin_host> host, std::string name, std::string params,
                    std::shared_ptr<quant_kernel> first, uint64_t version, uint64_t changes)
      : host_(std::move(host)), name_(std::move(name)), params_(std::move(params)),
        types_(first->types().begin(), first->types().end()), seen_changes_(changes), version_(version) {
    current_.store(std::move(first));
  }

  std::string name() const override { return current_.load()->name(); }
  std::string version() const override { return current_.load()->version(); }
  std::span<const uint32_t> types() const override { return types_; }

  void begin_step() override {
    const uint64_t changes = host_->changes();
    if (changes == seen_changes_.load(std::memory_order_relaxed)) return;
    std::lock_guard lock(swap_mutex_);
    seen_changes_.store(changes, std::memory_order_relaxed);
    const uint64_t v = host_->version_id(name_);
    if (v == 0 || v == version_) return;  // unloaded (keep serving) or unchanged
    version_ = v;
    auto next = host_->create_quant_kernel(name_, params_);
    if (!next) {
      log_warn("kernel plugin " + name_ + ": the reloaded version cannot serve (" + next.err().message +
               "); version " + current_.load()->version() + " keeps serving");
      return;
    }
    auto t = (*next)->types();
    if (!std::equal(t.begin(), t.end(), types_.begin(), types_.end())) {
      log_warn("kernel plugin " + name_ + ": version " + (*next)->version() +
               " handles other weight types than the version in use; restart to use it");
      return;
    }
    log_info("kernel plugin " + name_ + ": version " + (*next)->version() + " serves from this step on");
    current_.store(std::move(*next));
  }

  expected<void> gemv(uint32_t type, const void* w, size_t row_bytes, int64_t k, int64_t n, const float* x,
                      int64_t m, float* y) override {
    return current_.load()->gemv(type, w, row_bytes, k, n, x, m, y);
  }
  expected<void> quantize_row(uint32_t type, const float* x, void* dst, int64_t k) override {
    return current_.load()->quantize_row(type, x, dst, k);
  }
  expected<void> dequantize_row(uint32_t type, const void* src, float* y, int64_t k) override {
    return current_.load()->dequantize_row(type, src, y, k);
  }
  // The row-split interface of the version serving now. A reload swaps between steps only
  // (begin_step), so one product's calls all reach one version.
  bool row_split() const override { return current_.load()->row_split(); }
  expected<act_spec> act_format(uint32_t type, int64_t k) override { return current_.load()->act_format(type, k); }
  expected<void> quantize_act(uint32_t type, const float* x, int64_t k, float static_scale, void* out) override {
    return current_.load()->quantize_act(type, x, k, static_scale, out);
  }
  expected<void> gemm(uint32_t type, const void* w, size_t row_bytes, int64_t k, int64_t n, const void* act,
                      size_t act_stride, int64_t m, float* y, int64_t ldy) override {
    return current_.load()->gemm(type, w, row_bytes, k, n, act, act_stride, m, y, ldy);
  }

 private:
  std::shared_ptr<plugin_host> host_;
  std::string name_, params_;
  std::vector<uint32_t> types_;  ///< of the first version; later versions must match
  std::atomic<std::shared_ptr<quant_kernel>> current_;
  std::atomic<uint64_t> seen_changes_;
  std::mutex swap_mutex_;
  uint64_t version_;  // guarded by swap_mutex_
};

}  // namespace

expected<std::shared_ptr<quant_kernel>> make_live_quant_kernel(std::shared_ptr<plugin_host> host, const std::string& name,
                                                               const std::string& params_json) {
  const uint64_t changes = host->changes();
  const uint64_t version = host->version_id(name);
  auto first = host->create_quant_kernel(name, params_json);
  if (!first) return first.err();
  return std::shared_ptr<quant_kernel>(
      std::make_shared<live_quant_kernel>(std::move(host), name, params_json, std::move(*first), version, changes));
}

}  // namespace fw
