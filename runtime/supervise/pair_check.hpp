// pair_check: the consistency check at start across the two devices of a prefill/decode pair
// (SPEC.md: mismatched CUDA versions made NVLink handshakes time out). Each device is described
// by what it runs: its kind, on CUDA the runtime and driver versions and compute capability, the
// fingerprint of the model file it serves, the kv_codec stream version it speaks and the KV
// shape it holds. Any difference that would corrupt or stall a KV hand-off refuses physical
// separation; the message names both sides. Pure: descriptions in, verdict out; the composition
// root (runtime/setup) describes the real devices, tests fabricate them.
// Thread-safety: plain values and a free function.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fw {

struct device_identity {
  std::string name;  ///< "prefill cpu:0": role and device, for messages
  std::string kind;  ///< "cpu" or "cuda"
  // CUDA devices only ("" = could not be read, which refuses the pair):
  std::string cuda_runtime;        ///< e.g. "13.0"
  std::string cuda_driver;         ///< e.g. "13.0" (the driver's CUDA version)
  std::string compute_capability;  ///< e.g. "9.0"
  std::string model_fingerprint;   ///< of the weights it serves (same file: same fingerprint)
  uint32_t kv_format_version = 0;  ///< kv_codec stream version
  uint32_t kv_layers = 0, kv_heads = 0, kv_head_dim = 0;  ///< the KV shape of its pool
};

struct pair_verdict {
  bool ok = true;
  std::vector<std::string> mismatches;  ///< one line each: "CUDA runtime: prefill cuda:0 has 12.4, decode cuda:1 has 13.0"
  /// "" when ok; else why physical separation is refused and what happens instead.
  std::string message;
};

/// Checks that a KV cache made on `prefill` can be handed to `decode`.
pair_verdict check_pair(const device_identity& prefill, const device_identity& decode);

}  // namespace fw
