#include "runtime/device/verify_cost.hpp"

#include <algorithm>
#include <chrono>

#include "runtime/device/forward_batch.hpp"

namespace fw {

expected<std::vector<double>> calibrate_verify_cost(backend& b, int max_k, int context, int reps) {
  auto& pool = b.kv_pool();
  auto h = pool.allocate(static_cast<uint32_t>(context + max_k + 1));
  if (!h) return make_error(errc::out_of_memory, "verify cost calibration: KV pool exhausted");
  std::vector<int32_t> toks(static_cast<size_t>(context + max_k + 1));
  for (size_t i = 0; i < toks.size(); ++i) toks[i] = static_cast<int32_t>(3 + (i * 37) % 97);
  std::vector<float> logits;
  forward_batch batch;
  batch.add_sequence(&*h, toks.data(), static_cast<size_t>(context), 0, false);
  if (auto r = b.forward(batch, logits); !r) {
    ignore_error("verify-cost calibration", pool.release(*h));
    return r.err();
  }
  std::vector<double> ms(static_cast<size_t>(max_k + 1), 1e300);
  for (int rep = 0; rep < reps; ++rep) {
    for (int k = 0; k <= max_k; ++k) {
      batch.clear();
      batch.add_sequence(&*h, toks.data() + context, static_cast<size_t>(k + 1), context, true);
      const auto t0 = std::chrono::steady_clock::now();
      auto r = b.forward(batch, logits);
      const double t = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      ignore_error("verify-cost calibration", pool.truncate(*h, static_cast<uint32_t>(context)));
      if (!r) {
        ignore_error("verify-cost calibration", pool.release(*h));
        return r.err();
      }
      ms[static_cast<size_t>(k)] = std::min(ms[static_cast<size_t>(k)], t);
    }
  }
  ignore_error("verify-cost calibration", pool.release(*h));
  std::vector<double> cost(ms.size());
  for (size_t k = 0; k < ms.size(); ++k) cost[k] = std::max(k ? cost[k - 1] : 1.0, ms[k] / ms[0]);
  return cost;
}

}  // namespace fw
