// runtime_parts: the one composition root. From a config it builds, in order: the log level,
// the device check (refusing what this build cannot do), the model, the plugin host and its
// [[plugins.load]] entries, the kernel plugins, the device backend with its KV pool, the
// speculative draft (through the draft registry) and the k policy. `generate`, the console, the
// benchmarks and the server all build their engine here, so they cannot drift apart.
//
// Ownership: runtime_parts owns everything it built. Members are declared so that destruction
// runs draft -> backend -> plugin host (a plugin object must die before its library). An engine
// started on `device` must be shut down before the parts are destroyed.
// Thread-safety: build on one thread; afterwards members follow their own contracts.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "runtime/base/expected.hpp"
#include "runtime/config/config.hpp"
#include "runtime/device/backend.hpp"
#include "runtime/device/cpu/cpu_backend.hpp"
#include "runtime/device/device_set.hpp"
#include "runtime/model/model.hpp"
#include "runtime/plugin/plugin_host.hpp"
#include "runtime/setup/engine_limits.hpp"
#include "runtime/spec/drafts/draft_registry.hpp"
#include "runtime/spec/drafts/drafter.hpp"
#include "runtime/spec/k_policy.hpp"
#include "runtime/supervise/pair_check.hpp"

namespace fw {

/// What a tool asks of the composition root besides its config.
struct build_options {
  /// An already loaded model (the console loads it itself to show progress); null: load
  /// cfg.model.path.
  std::shared_ptr<const model> preloaded;
  /// KV pool capacity in tokens; 0: as [kv_cache] and the device's kv_pool_mib say.
  uint32_t kv_tokens = 0;
  /// Build the [speculative] draft (and, for k = auto, calibrate the verification cost).
  bool build_draft = true;
  /// Build the devices (backends with their packed weight copies and KV pools); false: the model,
  /// plugins and host threads only, for tools that read the weights without running the model
  /// (uncalibrated quantize). No draft either then.
  bool build_devices = true;
  /// How to load cfg.model.path (ignored with `preloaded`): e.g. converted to f32 for calibration.
  weight_load_options load;
  /// Sees the backend's activations (calibration, quality reports); must outlive the parts.
  activation_observer* observer = nullptr;
  /// Test seam: changes the descriptions of a prefill/decode pair before the consistency check
  /// (a fabricated CUDA mismatch, another model file).
  std::function<void(device_identity& prefill, device_identity& decode)> amend_identities;
};

class runtime_parts {
 public:
  // Declaration order is destruction order reversed: plugins outlive the backend and draft.
  config cfg;  ///< the effective configuration
  std::shared_ptr<plugin_host> plugins;
  std::shared_ptr<const model> m;
  uint32_t n_ctx = 0;      ///< context window per sequence (cfg.model.ctx_size resolved)
  uint32_t kv_tokens = 0;  ///< the device's KV pool capacity in tokens
  std::vector<std::shared_ptr<quant_kernel>> kernels;  ///< [compute] kernel_plugins, following reloads
  /// Host threads for drafts and tools when the device is not the CPU (a CUDA device); null when
  /// the CPU backend's own kernel threads serve.
  std::shared_ptr<cpu::thread_pool> host_threads;
  /// The [[devices]] as one list, each backend with its role: the decoder (role decode or both),
  /// a separate prefiller (role prefill; dropped when the pair check fails) and an offloader
  /// (role offload). The engine takes the whole set (actors::engine::start(parts)).
  device_set devices;
  /// The decode device (null before the devices are built or after they moved to an engine).
  [[nodiscard]] backend* device() const { return devices.decoder(); }
  std::unique_ptr<drafter> draft;  ///< [speculative] draft; null: plain decoding
  k_policy policy;
  std::vector<std::string> warnings;  ///< also logged; tools may show them in a banner
  /// The start-time consistency check of a configured prefill/decode pair (pair_check): when it
  /// fails, the prefill device is dropped (co-located) and pair.message says why.
  pair_verdict pair;
  /// [supervisor] telemetry_plugins that loaded (one that did not is a warning, not an error:
  /// a host without an NVIDIA driver still serves).
  std::vector<std::shared_ptr<telemetry_feed>> telemetry;
  activation_observer* observer = nullptr;  ///< given to every backend make_backend builds
  /// [node] secret_file or FLYWHEEL_NODE_SECRET (runtime/net/link_auth), read by build_runtime
  /// for roles prefill and decode; empty: the node link is unauthenticated.
  std::string node_secret;
  /// [node] tls_cert / tls_key / tls_ca, checked by build_runtime (check_link_tls) for roles
  /// prefill and decode; disabled: the node link is plain TCP.
  link_tls node_tls;

  /// The engine limits of this config: context, [scheduler] and the draft.
  [[nodiscard]] engine_limits limits() const;
  /// Rebuilds (or drops) the draft and k policy for cfg.speculative (after changing it).
  expected<void> rebuild_draft();
  /// A further backend for the same model with this config's kernel plugins and KV settings,
  /// holding kv_tokens tokens (benchmarks that size the pool per run); `threads` > 0: a CPU
  /// backend with that many kernel threads instead of the device's.
  [[nodiscard]] expected<std::unique_ptr<backend>> make_backend(uint32_t kv_tokens, int threads = 0) const;
  /// A draft for `spec` over this target and its backend, or `target`, another backend of this
  /// model (an engine's: bench-spec --engine); null for draft = "none".
  [[nodiscard]] expected<std::unique_ptr<drafter>> make_draft(const speculative_section& spec,
                                                              backend* target = nullptr) const;
  /// The draft registry setup uses: the built-in kinds plus "plugin" through this host.
  [[nodiscard]] draft_registry drafts() const;
  /// This process as a node of several ([node]): `role` ("decode node") and the device, the
  /// model fingerprint and KV shape, for the handshake between nodes (pair_check).
  [[nodiscard]] device_identity node_identity(const std::string& role) const;
  /// The node limits of a decode node configured by `node` (its peers, heartbeats, deadline,
  /// chunk size) with node_identity("decode node"); limits() uses it for [node] role decode.
  [[nodiscard]] node_limits node_limits_of(const node_section& node) const;
  /// The kernel threads of the target's backend (drafts and fit-draft compute on them), or
  /// host_threads when the target is a GPU.
  [[nodiscard]] std::shared_ptr<cpu::thread_pool> threads() const;
};

/// Refuses, with a message naming the [[devices]] entry, what this build cannot run: a CUDA
/// device in a build without the CUDA backend, a CUDA device in any role but the one "both"
/// device of a single node, and device sets other than one "both" device or a "prefill" +
/// "decode" pair, each optionally with one "offload" device. No model is loaded.
expected<void> check_devices(const config& cfg);

/// Context window: cfg.model.ctx_size, or the model's training context capped at 4096.
uint32_t resolve_context(const config& cfg, const model_config& mc);
/// KV pool tokens: the device's kv_pool_mib, else [kv_cache] pool_tokens or pool_mib.
uint32_t resolve_kv_tokens(const config& cfg, const model_config& mc);
/// The same for one [[devices]] entry (its own kv_pool_mib).
uint32_t resolve_kv_tokens(const config& cfg, const model_config& mc, const device_section& dev);

/// The draft `spec` asks for, through the draft registry (built-in kinds, and "plugin:NAME"
/// through `plugins` when given), over the target backend; a separate draft model gets its own
/// CPU backend (draft_options, with kv_tokens) on `threads`: the target's kernel threads when
/// it is a CPU backend and threads is null. Null for draft = "none".
expected<std::unique_ptr<drafter>> make_drafter(const speculative_section& spec, std::shared_ptr<const model> target,
                                                backend& target_backend, uint32_t kv_tokens,
                                                std::shared_ptr<plugin_host> plugins = nullptr,
                                                cpu_backend_options draft_options = {},
                                                std::shared_ptr<cpu::thread_pool> threads = nullptr);

/// Builds everything `cfg` describes (see the header comment).
expected<runtime_parts> build_runtime(config cfg, const build_options& options = {});

/// The k policy a [speculative] section asks for, capped by bandwidth_gbs (0: no cap); with
/// k = auto and a measured verify_cost (calibrate_verify_cost) it picks k by cost.
k_policy make_k_policy(const speculative_section& spec, double bandwidth_gbs, std::vector<double> verify_cost = {});

}  // namespace fw
