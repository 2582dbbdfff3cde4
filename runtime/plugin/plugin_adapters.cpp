#include "runtime/plugin/plugin_adapters.hpp"

#include <cstring>
#include <vector>

namespace fw {

namespace {

/// Runs a plugin call; a (forbidden) exception becomes FW_PLUGIN_E_INTERNAL.
template <class F>
int guarded(F&& f) noexcept {
  try {
    return f();
  } catch (...) {
    return FW_PLUGIN_E_INTERNAL;
  }
}

/// One plugin object plus the library it came from. Destroyed: destroy() first, then the library
/// reference (member order), which may unload the library.
class plugin_object {
 public:
  plugin_object(std::shared_ptr<plugin_library> lib, void* self) : lib_(std::move(lib)), self_(self) {}
  ~plugin_object() { lib_->destroy(self_); }
  plugin_object(const plugin_object&) = delete;
  plugin_object& operator=(const plugin_object&) = delete;

  [[nodiscard]] plugin_library& lib() const { return *lib_; }
  [[nodiscard]] void* self() const { return self_; }

 private:
  std::shared_ptr<plugin_library> lib_;
  void* self_;
};

class c_draft_plugin final : public draft_plugin {
 public:
  c_draft_plugin(std::shared_ptr<plugin_library> lib, void* self, const draft_options& options)
      : obj_(std::move(lib), self),
        table_(static_cast<const fw_draft_model_v1*>(obj_.lib().table().kind_table)),
        n_vocab_((table_->flags & FW_DRAFT_PROBS) ? options.n_vocab : 0) {}

  std::string name() const override { return obj_.lib().name(); }
  std::string version() const override { return obj_.lib().version(); }
  std::string file() const override { return obj_.lib().file(); }

  expected<void> begin(uint64_t seq, std::span<const int32_t> prompt, const sampling_params& params) override {
    const fw_sampling_v1 s{params.temperature, params.top_k, params.top_p, params.min_p, params.seed};
    const int rc = guarded([&] { return table_->begin(obj_.self(), seq, prompt.data(), prompt.size(), &s); });
    if (rc < 0) return obj_.lib().call_error("begin", rc);
    return {};
  }

  expected<draft_proposal> propose(uint64_t seq, std::span<const int32_t> history, int k) override {
    if (k <= 0) return draft_proposal{};
    tokens_.assign(static_cast<size_t>(k), 0);
    if (n_vocab_ > 0) probs_.assign(static_cast<size_t>(k) * n_vocab_, 0.0f);
    const int rc = guarded([&] {
      return table_->propose(obj_.self(), seq, history.data(), history.size(), k, tokens_.data(),
                             n_vocab_ > 0 ? probs_.data() : nullptr, n_vocab_);
    });
    if (rc < 0) return obj_.lib().call_error("propose", rc);
    if (rc > k)
      return make_error(errc::internal, obj_.lib().describe() + ": propose() returned " +
                                            std::to_string(rc) + " tokens for k = " + std::to_string(k));
    draft_proposal p;
    p.tokens.assign(tokens_.begin(), tokens_.begin() + rc);
    if (n_vocab_ > 0)
      for (int i = 0; i < rc; ++i)
        p.probs.emplace_back(probs_.begin() + static_cast<ptrdiff_t>(i) * n_vocab_,
                             probs_.begin() + static_cast<ptrdiff_t>(i + 1) * n_vocab_);
    return p;
  }

  void accept(uint64_t seq, std::span<const int32_t> history) override {
    // drafter::accept cannot fail; a plugin error here shows up as a failed next propose().
    guarded([&] { return table_->accept(obj_.self(), seq, history.data(), history.size()); });
  }

  void end(uint64_t seq) override {
    guarded([&] {
      table_->end(obj_.self(), seq);
      return 0;
    });
  }

 private:
  plugin_object obj_;
  const fw_draft_model_v1* table_;
  int32_t n_vocab_;
  std::vector<int32_t> tokens_;
  std::vector<float> probs_;
};

class c_quant_kernel final : public quant_kernel {
 public:
  c_quant_kernel(std::shared_ptr<plugin_library> lib, void* self)
      : obj_(std::move(lib), self), v2_(obj_.lib().kernel_v2()), types_(obj_.lib().types()) {
    if (v2_) t2_ = static_cast<const fw_quant_kernel_v2*>(obj_.lib().table().kind_table);
    else t1_ = static_cast<const fw_quant_kernel_v1*>(obj_.lib().table().kind_table);
  }

  std::string name() const override { return obj_.lib().name(); }
  std::string version() const override { return obj_.lib().version(); }
  std::span<const uint32_t> types() const override { return types_; }

  expected<void> gemv(uint32_t type, const void* w, size_t row_bytes, int64_t k, int64_t n,
                      const float* x, int64_t m, float* y) override {
    if (!handles(type)) return unsupported(type);
    if (v2_) {  // the v1 call on a v2 plugin: quantize here, one gemm on this thread
      auto spec = act_format(type, k);
      if (!spec) return spec.err();
      std::vector<uint8_t> act(spec->row_bytes * static_cast<size_t>(m));
      for (int64_t j = 0; j < m; ++j)
        if (auto ok = quantize_act(type, x + j * k, k, 0.f, act.data() + j * spec->row_bytes); !ok) return ok;
      return gemm(type, w, row_bytes, k, n, act.data(), spec->row_bytes, m, y, n);
    }
    const int rc = guarded([&] { return t1_->gemv(obj_.self(), type, w, row_bytes, k, n, x, m, y); });
    if (rc < 0) return obj_.lib().call_error("gemv", rc);
    return {};
  }

  expected<void> quantize_row(uint32_t type, const float* x, void* dst, int64_t k) override {
    auto* fn = v2_ ? t2_->quantize_row : t1_->quantize_row;
    if (!handles(type) || !fn) return unsupported(type);
    const int rc = guarded([&] { return fn(obj_.self(), type, x, dst, k); });
    if (rc < 0) return obj_.lib().call_error("quantize_row", rc);
    return {};
  }

  expected<void> dequantize_row(uint32_t type, const void* src, float* y, int64_t k) override {
    auto* fn = v2_ ? t2_->dequantize_row : t1_->dequantize_row;
    if (!handles(type) || !fn) return unsupported(type);
    const int rc = guarded([&] { return fn(obj_.self(), type, src, y, k); });
    if (rc < 0) return obj_.lib().call_error("dequantize_row", rc);
    return {};
  }

  bool row_split() const override { return v2_; }

  expected<act_spec> act_format(uint32_t type, int64_t k) override {
    if (!v2_ || !handles(type)) return unsupported(type);
    act_spec spec;
    const int rc = guarded([&] { return t2_->act_format(obj_.self(), type, k, &spec.format, &spec.row_bytes); });
    if (rc < 0) return obj_.lib().call_error("act_format", rc);
    if (spec.format > FW_ACT_I16_ROW || spec.row_bytes == 0)
      return make_error(errc::internal, obj_.lib().describe() + ": act_format() named an unknown activation format " +
                                            std::to_string(spec.format));
    return spec;
  }

  expected<void> quantize_act(uint32_t type, const float* x, int64_t k, float static_scale, void* out) override {
    if (!v2_ || !handles(type)) return unsupported(type);
    const int rc = guarded([&] { return t2_->quantize_act(obj_.self(), type, x, k, static_scale, out); });
    if (rc < 0) return obj_.lib().call_error("quantize_act", rc);
    return {};
  }

  expected<void> gemm(uint32_t type, const void* w, size_t row_bytes, int64_t k, int64_t n, const void* act,
                      size_t act_stride, int64_t m, float* y, int64_t ldy) override {
    if (!v2_ || !handles(type)) return unsupported(type);
    const int rc = guarded([&] { return t2_->gemm(obj_.self(), type, w, row_bytes, k, n, act, act_stride, m, y, ldy); });
    if (rc < 0) return obj_.lib().call_error("gemm", rc);
    return {};
  }

 private:
  error unsupported(uint32_t type) const {
    return make_error(errc::unsupported, obj_.lib().describe() + ": does not provide this for ggml type " +
                                             std::to_string(type));
  }

  plugin_object obj_;
  bool v2_;
  const fw_quant_kernel_v1* t1_ = nullptr;
  const fw_quant_kernel_v2* t2_ = nullptr;
  std::vector<uint32_t> types_;
};

class c_telemetry_source final : public telemetry_feed {
 public:
  c_telemetry_source(std::shared_ptr<plugin_library> lib, void* self)
      : obj_(std::move(lib), self), table_(static_cast<const fw_telemetry_source_v1*>(obj_.lib().table().kind_table)) {}

  std::string describe() const override {
    std::string out = obj_.lib().name() + " " + obj_.lib().version();
    if (table_->describe) {
      char buf[256] = {0};
      if (guarded([&] { return table_->describe(obj_.self(), buf, sizeof buf); }) >= 0 && buf[0]) {
        buf[sizeof buf - 1] = '\0';
        out += std::string(": ") + buf;
      }
    }
    return out;
  }

  expected<std::vector<telemetry_sample>> sample(double now_s) override {
    std::vector<fw_telemetry_sample_v1> raw(256);
    const int rc = guarded([&] { return table_->sample(obj_.self(), raw.data(), raw.size()); });
    if (rc < 0) return obj_.lib().call_error("sample", rc);
    if (static_cast<size_t>(rc) > raw.size())
      return make_error(errc::internal, obj_.lib().describe() + ": sample() returned " + std::to_string(rc) +
                                            " readings for room for " + std::to_string(raw.size()));
    std::vector<telemetry_sample> out;
    for (int i = 0; i < rc; ++i) {
      auto text = [](const char* s, size_t cap) { return std::string(s, strnlen(s, cap)); };
      out.push_back({now_s, text(raw[i].device, sizeof raw[i].device), text(raw[i].metric, sizeof raw[i].metric),
                     raw[i].value});
    }
    return out;
  }

 private:
  plugin_object obj_;
  const fw_telemetry_source_v1* table_;
};

}  // namespace

expected<std::shared_ptr<telemetry_feed>> make_telemetry_source(std::shared_ptr<plugin_library> lib,
                                                               const std::string& params_json) {
  if (lib->kind() != plugin_kind::telemetry_source)
    return make_error(errc::invalid_argument, lib->describe() + " is a " + to_string(lib->kind()) +
                                                  " plugin, not a telemetry_source");
  auto self = lib->create(params_json);
  if (!self) return self.err();
  return std::shared_ptr<telemetry_feed>(std::make_shared<c_telemetry_source>(std::move(lib), *self));
}

expected<std::shared_ptr<draft_plugin>> make_draft_plugin(std::shared_ptr<plugin_library> lib,
                                                          const draft_options& options) {
  if (lib->kind() != plugin_kind::draft_model)
    return make_error(errc::invalid_argument, lib->describe() + " is a " + to_string(lib->kind()) +
                                                  " plugin, not a draft_model");
  auto self = lib->create(options.params_json);
  if (!self) return self.err();
  return std::shared_ptr<draft_plugin>(std::make_shared<c_draft_plugin>(std::move(lib), *self, options));
}

expected<std::shared_ptr<quant_kernel>> make_quant_kernel(std::shared_ptr<plugin_library> lib,
                                                                        const std::string& params_json) {
  if (lib->kind() != plugin_kind::quant_kernel)
    return make_error(errc::invalid_argument, lib->describe() + " is a " + to_string(lib->kind()) +
                                                  " plugin, not a quant_kernel");
  auto self = lib->create(params_json);
  if (!self) return self.err();
  return std::shared_ptr<quant_kernel>(std::make_shared<c_quant_kernel>(std::move(lib), *self));
}

}  // namespace fw
