// Shared by the GPU tests: the skip with a printed reason when this machine has no CUDA device
// (CI, the development host), device buffers, and a greedy decoding loop over any backend.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include <cuda_runtime_api.h>

#include "runtime/device/backend.hpp"
#include "runtime/device/cuda/cuda_backend.hpp"
#include "runtime/device/prefill.hpp"

#define FW_REQUIRE_GPU()                                                                          \
  do {                                                                                            \
    auto n_ = ::fw::cuda_device_count();                                                          \
    if (!n_) GTEST_SKIP() << n_.err().message << ": GPU test skipped (runs on a GPU host: tools/gpu-check.sh)"; \
  } while (0)

namespace fw::test {

/// A device copy of host values; freed at scope end.
template <class T>
struct device_array {
  T* p = nullptr;
  size_t n = 0;
  explicit device_array(size_t count) : n(count) { EXPECT_EQ(cudaMalloc(reinterpret_cast<void**>(&p), std::max<size_t>(n, 1) * sizeof(T)), cudaSuccess); }
  explicit device_array(const std::vector<T>& v) : device_array(v.size()) {
    EXPECT_EQ(cudaMemcpy(p, v.data(), n * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
  }
  device_array(const device_array&) = delete;
  device_array& operator=(const device_array&) = delete;
  ~device_array() { cudaFree(p); }
  std::vector<T> get() const {
    std::vector<T> v(n);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(v.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
    return v;
  }
};

/// Greedy continuation of `prompt` for n tokens on `b` (the prompt prefilled in chunks of
/// `chunk`, then one urgent decode row per step); margins[i]: the gap between the best and the
/// second-best logit at step i (a divergence between devices is a near-tie when it is small).
struct greedy_run {
  std::vector<int32_t> tokens;
  std::vector<float> margins;
  std::vector<std::vector<float>> logits;  ///< every step's logits (kept when keep_logits)
};
inline greedy_run greedy_decode(backend& b, const std::vector<int32_t>& prompt, int n, uint32_t chunk = 64,
                         bool keep_logits = false) {
  greedy_run run;
  auto kv = b.kv_pool().allocate(0);
  EXPECT_TRUE(kv.has_value());
  forward_result r;
  auto ok = prefill_tokens(b, *kv, prompt.data(), prompt.size(), 0, chunk, r);
  EXPECT_TRUE(ok) << (ok ? "" : ok.err().message);
  if (!ok) return run;
  int32_t pos = static_cast<int32_t>(prompt.size());
  for (int i = 0; i < n; ++i) {
    std::vector<float> l = r.logits;
    auto top = std::max_element(l.begin(), l.end());
    const int32_t tok = static_cast<int32_t>(top - l.begin());
    float best = *top, second = -INFINITY;
    for (size_t j = 0; j < l.size(); ++j)
      if (static_cast<int32_t>(j) != tok) second = std::max(second, l[j]);
    run.tokens.push_back(tok);
    run.margins.push_back(best - second);
    if (keep_logits) run.logits.push_back(std::move(l));
    forward_batch fb;
    fb.urgent = true;
    fb.kv.push_back(&*kv);
    fb.add(tok, pos++, 0, true);
    auto s = b.forward(fb, r);
    EXPECT_TRUE(s) << (s ? "" : s.err().message);
    if (!s) break;
  }
  EXPECT_TRUE(b.kv_pool().release(*kv));
  return run;
}

}  // namespace fw::test
