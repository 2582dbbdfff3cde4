#include "runtime/supervise/pair_check.hpp"

namespace fw {
namespace {

std::string shown(const std::string& v) { return v.empty() ? "unknown" : v; }

}  // namespace

pair_verdict check_pair(const device_identity& a, const device_identity& b) {
  pair_verdict v;
  auto differs = [&](const char* what, const std::string& x, const std::string& y) {
    if (x == y && !x.empty()) return;
    v.mismatches.push_back(std::string(what) + ": " + a.name + " has " + shown(x) + ", " + b.name + " has " + shown(y));
  };
  differs("model file", a.model_fingerprint, b.model_fingerprint);
  if (a.kv_format_version != b.kv_format_version || a.kv_format_version == 0)
    differs("KV format version", std::to_string(a.kv_format_version), std::to_string(b.kv_format_version));
  if (a.kv_layers != b.kv_layers || a.kv_heads != b.kv_heads || a.kv_head_dim != b.kv_head_dim) {
    auto shape = [](const device_identity& d) {
      return std::to_string(d.kv_layers) + " layers x " + std::to_string(d.kv_heads) + " KV heads x " +
             std::to_string(d.kv_head_dim);
    };
    differs("KV shape", shape(a), shape(b));
  }
  // Peer copies between two GPUs need the same stack on both; a CPU side is host-staged.
  if (a.kind == "cuda" && b.kind == "cuda") {
    differs("CUDA runtime", a.cuda_runtime, b.cuda_runtime);
    differs("CUDA driver", a.cuda_driver, b.cuda_driver);
    differs("compute capability", a.compute_capability, b.compute_capability);
  }
  v.ok = v.mismatches.empty();
  if (!v.ok) {
    v.message = "physical prefill/decode separation refused, prompts prefill on the decode device (co-located): ";
    for (size_t i = 0; i < v.mismatches.size(); ++i) v.message += (i ? "; " : "") + v.mismatches[i];
  }
  return v;
}

}  // namespace fw
