#include "runtime/setup/runtime_parts.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <thread>

#include "runtime/base/log.hpp"
#include "runtime/device/cpu/cpu_backend.hpp"
#ifdef FW_HAVE_CUDA
#include "runtime/device/cuda/cuda_backend.hpp"
#endif
#include "runtime/device/verify_cost.hpp"
#include "runtime/net/link_auth.hpp"
#include "runtime/net/link_tls.hpp"
#include "runtime/setup/feature_map_fit.hpp"
#include "runtime/setup/device_identity_of.hpp"
#include "runtime/plugin/kinds/live_draft.hpp"
#include "runtime/plugin/kinds/live_quant_kernel.hpp"

namespace fw {
namespace {

log_level to_log_level(logging_level l) {
  switch (l) {
    case logging_level::debug: return log_level::debug;
    case logging_level::info: return log_level::info;
    case logging_level::warn: return log_level::warn;
    case logging_level::error: return log_level::error;
  }
  return log_level::info;
}

kv_dtype to_kv_dtype(kv_cache_type t) {
  switch (t) {
    case kv_cache_type::f32: return kv_dtype::f32;
    case kv_cache_type::q8_0: return kv_dtype::q8;
    case kv_cache_type::f16: break;
  }
  return kv_dtype::f16;
}

/// The device that decodes (role decode or both; check_devices allows exactly one).
const device_section& the_device(const config& cfg) {
  for (const auto& d : cfg.devices)
    if (d.role == device_role::decode || d.role == device_role::both) return d;
  return cfg.devices.front();
}

/// The offload device (role offload), or null.
const device_section* offload_only_device(const config& cfg) {
  for (const auto& d : cfg.devices)
    if (d.role == device_role::offload) return &d;
  return nullptr;
}

/// The separate prefill device (role prefill), or null when the decode device prefills too.
const device_section* prefill_only_device(const config& cfg) {
  for (const auto& d : cfg.devices)
    if (d.role == device_role::prefill) return &d;
  return nullptr;
}

int device_threads(const config& cfg, const device_section& dev) {
  if (dev.threads > 0) return dev.threads;
  if (!dev.cores.empty()) return static_cast<int>(dev.cores.size());
  return cfg.compute.threads;
}

cpu_backend_options backend_options(const config& cfg, const device_section& dev, uint32_t kv_tokens,
                                    const std::vector<std::shared_ptr<quant_kernel>>& kernels) {
  cpu_backend_options o;
  o.threads = device_threads(cfg, dev);
  o.cores = dev.cores;
  o.decode_priority = cfg.scheduler.decode_priority;
  o.kv_tokens = kv_tokens;
  o.kv_block_tokens = cfg.kv_cache.block_tokens;
  o.kv_type = to_kv_dtype(cfg.kv_cache.type);
  o.kernel_plugins = kernels;
  return o;
}

}  // namespace

expected<void> check_devices(const config& cfg) {
  std::string problems;
  auto add = [&](std::string p) { problems += (problems.empty() ? "" : "\n") + p; };
  for (size_t i = 0; i < cfg.devices.size(); ++i) {
    const auto& d = cfg.devices[i];
    const std::string where = "devices[" + std::to_string(i) + "]";
#ifndef FW_HAVE_CUDA
    if (d.kind == device_kind::cuda)
      add(where + ": kind = \"cuda\" is not supported: this build has no CUDA backend (nvcc was not found when it was "
                  "built; install the CUDA toolkit and rebuild, or use kind = \"cpu\")");
#else
    if (d.kind == device_kind::cuda && (cfg.devices.size() != 1 || d.role != device_role::both))
      add(where + ": a CUDA device runs as the only device, with role = \"both\" (GPU prefill/decode pairs and "
                  "offload need KV transfer out of GPU memory, which this version does not have)");
    if (d.kind == device_kind::cuda && cfg.node.role != node_role::both)
      add(where + ": a CUDA device cannot be a node of several yet (the KV stream reads host pools); use kind = \"cpu\"");
#endif
  }
  size_t prefill = 0, decode = 0, both = 0, offload = 0;
  for (const auto& d : cfg.devices) {
    prefill += d.role == device_role::prefill;
    decode += d.role == device_role::decode;
    both += d.role == device_role::both;
    offload += d.role == device_role::offload;
  }
  const bool one = both == 1 && prefill == 0 && decode == 0;
  const bool pair = prefill == 1 && decode == 1 && both == 0;
  if (problems.empty() && (offload > 1 || (!one && !pair)))
    add("devices: " + std::to_string(cfg.devices.size()) +
        " devices with these roles cannot be run; list either one device with role = \"both\" (prefill and decode "
        "share it) or two, one with role = \"prefill\" and one with role = \"decode\" (physical separation), and "
        "optionally one with role = \"offload\"");
  if (problems.empty() && cfg.node.role != node_role::both && (pair || offload > 0))
    add(std::string("node.role = \"") + std::string(enum_name(node_role_names, cfg.node.role)) +
        "\" runs on one device with role = \"both\": a node of several is itself one phase (prefill) or sends its "
        "prompts to its peers (decode); drop the [[devices]] prefill/offload entries");
  if (!problems.empty()) return make_error(errc::unsupported, problems);
  return {};
}

uint32_t resolve_context(const config& cfg, const model_config& mc) {
  return cfg.model.ctx_size > 0 ? cfg.model.ctx_size : std::min<uint32_t>(mc.n_ctx_train, 4096);
}

uint32_t resolve_kv_tokens(const config& cfg, const model_config& mc) { return resolve_kv_tokens(cfg, mc, the_device(cfg)); }

uint32_t resolve_kv_tokens(const config& cfg, const model_config& mc, const device_section& dev) {
  const auto& kv = cfg.kv_cache;
  kv_layout layout;
  layout.n_layer = mc.n_layer;
  layout.n_head_kv = mc.n_head_kv;
  layout.head_dim = mc.head_dim;
  layout.block_tokens = kv.block_tokens;
  layout.dtype = to_kv_dtype(kv.type);
  const uint32_t device_mib = dev.kv_pool_mib;
  if (device_mib > 0) return kv_block_pool::blocks_for_bytes(layout, size_t{device_mib} << 20) * kv.block_tokens;
  if (kv.pool_tokens > 0) return kv.pool_tokens;
  return kv_block_pool::blocks_for_bytes(layout, size_t{kv.pool_mib} << 20) * kv.block_tokens;
}

k_policy make_k_policy(const speculative_section& spec, double bandwidth_gbs, std::vector<double> verify_cost) {
  k_policy_config c;
  c.verify_cost = std::move(verify_cost);
  if (spec.k) {
    c.adaptive = false;
    c.fixed_k = static_cast<int>(*spec.k);
    c.k_max = std::max(c.k_max, c.fixed_k);
  }
  c.bandwidth_gbs = bandwidth_gbs;
  return k_policy(c);
}

engine_limits runtime_parts::limits() const {
  engine_limits lim;
  lim.n_ctx = n_ctx;
  lim.max_batch = cfg.scheduler.max_batch;
  lim.max_queue = cfg.scheduler.max_queue;
  lim.prefill_chunk = cfg.scheduler.prefill_chunk;
  lim.prefill_chunk_s = cfg.scheduler.prefill_chunk_ms / 1000.0;
  // A decode node's prompts go whole to its prefill peers (a slice past position 0 could not).
  lim.prefill_shortest_first =
      cfg.scheduler.prefill_order == prefill_order_type::shortest && cfg.node.role != node_role::decode;
  lim.prefill_max_wait_s = cfg.scheduler.prefill_max_wait_s;
  lim.admission_tpot_s = cfg.scheduler.admission_tpot_ms / 1000.0;
  lim.request_timeout_s = cfg.scheduler.request_timeout_s > 0 ? cfg.scheduler.request_timeout_s
                                                              : std::numeric_limits<double>::infinity();
  lim.draft = draft.get();
  lim.draft_runs_ahead = cfg.speculative.draft_threads > 0;
  lim.policy = policy;
  lim.prefill_deadline_s = cfg.scheduler.prefill_deadline_s > 0 ? cfg.scheduler.prefill_deadline_s
                                                                : std::numeric_limits<double>::infinity();
  switch (cfg.kv_cache.transfer) {
    case kv_transfer_type::automatic:
      // A q8_0 cache moves as int8 rows (its own values: a row re-quantizes to the same bytes).
      lim.kv_transfer = cfg.kv_cache.type == kv_cache_type::f32    ? kv_wire::f32
                        : cfg.kv_cache.type == kv_cache_type::q8_0 ? kv_wire::int8
                                                                   : kv_wire::f16;
      break;
    case kv_transfer_type::f32: lim.kv_transfer = kv_wire::f32; break;
    case kv_transfer_type::f16: lim.kv_transfer = kv_wire::f16; break;
    case kv_transfer_type::int8: lim.kv_transfer = kv_wire::int8; break;
  }
  lim.restart.backoff_s = cfg.supervisor.restart_backoff_ms / 1000.0;
  lim.restart.backoff_max_s = cfg.supervisor.restart_backoff_max_ms / 1000.0;
  lim.restart.max_restarts = cfg.supervisor.max_restarts;
  lim.restart.window_s = cfg.supervisor.restart_window_s;
  lim.restart.down_s = cfg.supervisor.down_s;
  lim.request_retries = cfg.supervisor.request_retries;
  lim.telemetry_poll_s = cfg.supervisor.telemetry_poll_ms / 1000.0;
  lim.telemetry_feeds = telemetry;
  lim.degradation.temp_degraded_c = cfg.supervisor.temp_degraded_c;
  lim.degradation.temp_co_located_c = cfg.supervisor.temp_co_located_c;
  lim.degradation.link_nominal_gbps = cfg.supervisor.link_nominal_gbps;
  lim.degradation.link_min_share = cfg.supervisor.link_min_share;
  lim.degradation.link_co_located_share = std::min(cfg.supervisor.link_min_share, lim.degradation.link_co_located_share);
  lim.degradation.sustain_samples = cfg.supervisor.sustain_samples;
  lim.degradation.recover_samples = cfg.supervisor.recover_samples;
  lim.degradation.k_cap = static_cast<int>(cfg.supervisor.degraded_k_cap);
  switch (cfg.supervisor.degraded_kv_transfer) {
    case kv_transfer_type::automatic: break;
    case kv_transfer_type::f32: lim.degraded_kv_transfer = kv_wire::f32; break;
    case kv_transfer_type::f16: lim.degraded_kv_transfer = kv_wire::f16; break;
    case kv_transfer_type::int8: lim.degraded_kv_transfer = kv_wire::int8; break;
  }
  if (cfg.rollout.enabled) {
    rollout_limits r;
    r.shares[0] = 1.0;  // stage 1 is the model file: every request
    for (size_t i = 0; i < 3 && i < cfg.rollout.shares_pct.size(); ++i) r.shares[i + 1] = cfg.rollout.shares_pct[i] / 100.0;
    r.start_stage = cfg.rollout.start_stage;
    r.p99_ratio = cfg.rollout.p99_ratio;
    r.max_error_rate = cfg.rollout.max_error_rate;
    r.max_draft_failure = cfg.rollout.max_draft_failure;
    r.min_requests = cfg.rollout.min_requests;
    r.advance_after = cfg.rollout.advance_after;
    r.cooldown_s = cfg.rollout.cooldown_s;
    lim.rollout = r;
  }
  if (cfg.node.role == node_role::decode) lim.nodes = node_limits_of(cfg.node);
  lim.offload.min_generated = cfg.scheduler.offload_after_tokens;
  lim.offload.max_free_share = cfg.scheduler.offload_below_free_share;
  lim.offload.max_step_s = cfg.scheduler.offload_tpot_ms / 1000.0;
  // The prefix cache lives where prompts are prefilled.
  backend* cache_home = devices.prefiller();
  if (cache_home)
    lim.prefix_cache_blocks = static_cast<uint32_t>(cfg.kv_cache.prefix_cache_share * cache_home->kv_pool().total_blocks());
  return lim;
}

node_limits runtime_parts::node_limits_of(const node_section& node) const {
  node_limits n;
  for (const auto& text : node.peers)
    if (auto a = parse_node_address(text)) n.peers.push_back(*a);  // validated with the config
  n.heartbeat_s = node.heartbeat_ms / 1000.0;
  n.heartbeat_timeout_s = node.heartbeat_timeout_ms / 1000.0;
  n.reconnect_s = node.reconnect_ms / 1000.0;
  n.reconnect_max_s = node.reconnect_max_ms / 1000.0;
  n.deadline_s = node.deadline_ms / 1000.0;
  n.chunk_bytes = node.chunk_kib * 1024;
  n.min_remote_tokens = node.min_remote_tokens;
  n.secret = node_secret;
  n.tls = node_tls;
  if (device()) n.self = node_identity("decode node");
  return n;
}

device_identity runtime_parts::node_identity(const std::string& role) const {
  std::string where = role + " cpu";
  if (!cfg.devices.empty()) where += ":" + std::to_string(cfg.devices.front().id);
  return device_identity_of(where, *device(), model_fingerprint(m->file()));
}

std::shared_ptr<cpu::thread_pool> runtime_parts::threads() const {
  auto* cpu = dynamic_cast<cpu_backend*>(device());
  return cpu ? cpu->thread_pool() : host_threads;
}

expected<std::unique_ptr<backend>> runtime_parts::make_backend(uint32_t tokens, int threads) const {
  const device_section& dev = the_device(cfg);
  if (dev.kind == device_kind::cuda) {
#ifdef FW_HAVE_CUDA
    if (!kernels.empty())
      return make_error(errc::unsupported, "compute.kernel_plugins are CPU kernels; a CUDA device runs its own (drop them)");
    if (observer) return make_error(errc::unsupported, "calibration and quality reports run on the CPU backend (kind = \"cpu\")");
    cuda_backend_options o;
    o.device = static_cast<int>(dev.id);
    o.kv_tokens = tokens;
    o.kv_block_tokens = cfg.kv_cache.block_tokens;
    o.kv_type = to_kv_dtype(cfg.kv_cache.type);
    o.decode_priority = cfg.scheduler.decode_priority;
    auto b = cuda_backend::create(m->config(), m->weights(), o);
    if (!b) return make_error(b.err().code, "devices: kind = \"cuda\", id = " + std::to_string(dev.id) + ": " + b.err().message);
    return std::unique_ptr<backend>(std::move(*b));
#else
    return make_error(errc::unsupported, "kind = \"cuda\": this build has no CUDA backend");
#endif
  }
  auto o = backend_options(cfg, dev, tokens, kernels);
  o.observer = observer;
  if (threads > 0) o.threads = threads;
  return std::unique_ptr<backend>(std::make_unique<cpu_backend>(m->config(), m->weights(), std::move(o)));
}

namespace {

/// The built-in kinds plus "plugin:NAME" through `host` (when there is one).
draft_registry registry_with(std::shared_ptr<plugin_host> host) {
  draft_registry r;
  register_builtin_drafts(r);
  r.add(draft_kind::plugin, [host](const draft_context& c) -> expected<std::unique_ptr<drafter>> {
    if (!host) return make_error(errc::unsupported, "no plugin host in this context");
    draft_options o;
    o.n_vocab = static_cast<int32_t>(c.target->config().n_vocab);
    return make_live_draft(host, c.spec->draft_plugin, o);
  });
  return r;
}

}  // namespace

draft_registry runtime_parts::drafts() const { return registry_with(plugins); }

expected<std::unique_ptr<drafter>> make_drafter(const speculative_section& spec, std::shared_ptr<const model> target,
                                                backend& target_backend, uint32_t kv_tokens,
                                                std::shared_ptr<plugin_host> plugins, cpu_backend_options draft_options,
                                                std::shared_ptr<cpu::thread_pool> threads) {
  if (!threads)
    if (auto* cpu = dynamic_cast<cpu_backend*>(&target_backend)) threads = cpu->thread_pool();
  if (!threads) threads = std::make_shared<cpu::thread_pool>(std::max(1, draft_options.threads));
  if ((spec.draft == draft_kind::feature || spec.draft == draft_kind::hybrid) && !spec.feature_map.empty() &&
      !std::filesystem::exists(spec.feature_map)) {
    // First use: the map is fitted now, once, on feature_prompts (never ahead of a config that
    // does not ask for it).
    log_info("the feature draft's map " + spec.feature_map + " does not exist yet: fitting it on " +
             spec.feature_prompts + " (once; a few minutes: ~2.5 min on 2 AVX-512 cores, ~10 on 2 AVX2 cores for the "
             "bundled model and prompts)");
    feature_fit_options o;
    o.progress = [](size_t done, size_t total) {
      if (done % 25 == 0 || done == total)
        log_info("fitting the feature map: answered " + std::to_string(done) + "/" + std::to_string(total) + " prompts");
    };
    feature_fit_report report;
    auto map = fit_feature_map_file(*target, target_backend, *threads, spec.feature_prompts, spec.feature_map, o, &report);
    if (!map)
      return make_error(map.err().code, "fitting the feature map on " + spec.feature_prompts + ": " + map.err().message +
                                            " (set [speculative] feature_prompts, or make it with `flywheel fit-draft --out " +
                                            spec.feature_map + "`)");
    log_info("fitted the feature map: " + std::to_string(map->samples) + " training pairs -> " + spec.feature_map);
  }
  // Threads of its own: the draft actor drafts while the target verifies (draft_threads > 0).
  if (spec.draft_threads > 0) threads = std::make_shared<cpu::thread_pool>(static_cast<int>(spec.draft_threads));
  draft_context ctx;
  ctx.spec = &spec;
  ctx.target = std::move(target);
  ctx.target_backend = &target_backend;
  ctx.threads = threads;
  ctx.kv_tokens = kv_tokens;
  draft_options.shared_threads = threads;  // the target's unless draft_threads gave it its own
  ctx.make_backend = [draft_options](const model& dm, uint32_t tokens) -> expected<std::unique_ptr<backend>> {
    cpu_backend_options o = draft_options;
    o.kv_tokens = tokens;
    return std::unique_ptr<backend>(std::make_unique<cpu_backend>(dm.config(), dm.weights(), o));
  };
  return registry_with(std::move(plugins)).make(ctx);
}

expected<std::unique_ptr<drafter>> runtime_parts::make_draft(const speculative_section& spec, backend* target) const {
  if (!target) target = device();
  if (!target) return make_error(errc::invalid_argument, "no target backend to draft for");
  // A separate draft model's backend keeps this config's KV settings (no kernel plugins); next
  // to a GPU target it runs on the host threads.
  auto* cpu = dynamic_cast<cpu_backend*>(target);
  return make_drafter(spec, m, *target, n_ctx, plugins, backend_options(cfg, the_device(cfg), n_ctx, {}),
                      cpu ? cpu->thread_pool() : threads());
}

expected<void> runtime_parts::rebuild_draft() {
  draft.reset();
  auto d = make_draft(cfg.speculative);
  if (!d) return d.err();
  draft = std::move(*d);
  // Capped by the bandwidth of the decode device; with k = auto and a draft, cost-aware by a
  // verify-cost calibration on the target (~0.2 s).
  const auto& dev = the_device(cfg);
  std::vector<double> cost;
  if (draft && !cfg.speculative.k)
    if (auto c = calibrate_verify_cost(*device())) cost = std::move(*c);
  policy = make_k_policy(cfg.speculative, dev.bandwidth_gbs, std::move(cost));
  return {};
}

expected<runtime_parts> build_runtime(config cfg, const build_options& options) {
  set_log_level(to_log_level(cfg.logging.level));
  if (auto ok = check_devices(cfg); !ok) return ok.err();
  runtime_parts p;
  p.cfg = std::move(cfg);
  if (options.preloaded) {
    p.m = options.preloaded;
  } else {
    auto m = model::load(p.cfg.model.path, options.load);
    if (!m) return m.err();
    p.m = *m;
  }
  p.observer = options.observer;
  if (p.cfg.node.role != node_role::both) {
    auto secret = load_link_secret(p.cfg.node.secret_file, std::getenv("FLYWHEEL_NODE_SECRET"));
    if (!secret) return secret.err();
    p.node_secret = std::move(*secret);
    if (p.node_secret.empty())
      p.warnings.push_back("the node link is unauthenticated: any host that reaches the node port is served; set "
                           "[node] secret_file (or FLYWHEEL_NODE_SECRET) on every node");
    p.node_tls = link_tls{p.cfg.node.tls_cert, p.cfg.node.tls_key, p.cfg.node.tls_ca};
    if (p.node_tls.enabled())
      if (auto ok = check_link_tls(p.node_tls); !ok) return ok.err();
  } else if (!p.cfg.node.secret_file.empty() || !p.cfg.node.tls_cert.empty()) {
    p.warnings.push_back(std::string(p.cfg.node.secret_file.empty() ? "node.tls_cert" : "node.secret_file") +
                         " is not read: node.role = \"both\" talks to no other node (it is for roles \"prefill\" and "
                         "\"decode\", e.g. `serve --role decode`)");
  }
  const auto& mc = p.m->config();
  p.n_ctx = resolve_context(p.cfg, mc);
  if (mc.sliding_window > 0 && p.n_ctx > mc.sliding_window)
    p.warnings.push_back("the model's metadata sets a sliding attention window of " + std::to_string(mc.sliding_window) +
                         " tokens; flywheel attends over the whole context (as llama.cpp does for " + mc.architecture +
                         "), which is the same computation up to " + std::to_string(mc.sliding_window) +
                         " tokens and differs beyond");
  if (p.n_ctx > mc.n_ctx_train)
    p.warnings.push_back("context size " + std::to_string(p.n_ctx) + " exceeds the model's training context " +
                         std::to_string(mc.n_ctx_train));
  p.kv_tokens = options.kv_tokens > 0 ? options.kv_tokens : resolve_kv_tokens(p.cfg, mc);
  if (p.kv_tokens < p.n_ctx)
    p.warnings.push_back("the KV pool (" + std::to_string(p.kv_tokens) + " tokens) is smaller than the context window (" +
                         std::to_string(p.n_ctx) + ")");

  p.plugins = std::make_shared<plugin_host>();
  for (const auto& err : p.plugins->load_all(p.cfg.plugins)) p.warnings.push_back("plugin not loaded: " + err.message);
  for (const auto& name : p.cfg.compute.kernel_plugins) {
    auto k = make_live_quant_kernel(p.plugins, name);
    if (!k) return make_error(k.err().code, "compute.kernel_plugins: " + k.err().message);
    p.kernels.push_back(std::move(*k));
  }
  for (const auto& name : p.cfg.supervisor.telemetry_plugins) {
    auto t = p.plugins->create_telemetry_source(name);
    if (!t) p.warnings.push_back("supervisor.telemetry_plugins: " + t.err().message + "; that telemetry is off");
    else p.telemetry.push_back(std::move(*t));
  }
  if (!options.build_devices || the_device(p.cfg).kind != device_kind::cpu) {
    // Drafts and tools beside a GPU (or without any device) compute on host threads.
    const int n = device_threads(p.cfg, the_device(p.cfg));
    p.host_threads = std::make_shared<cpu::thread_pool>(n > 0 ? n : static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  }
  if (!options.build_devices) {
    for (const auto& w : p.warnings) log_warn(w);
    return p;
  }
  auto be = p.make_backend(p.kv_tokens);
  if (!be) return be.err();
  const device_section& dec = the_device(p.cfg);
  auto name_of = [](const device_section& d) { return std::string(enum_name(device_kind_names, d.kind)) + ":" + std::to_string(d.id); };
  p.devices.add(name_of(dec), dec.role, std::move(*be));
  for (const auto& k : p.device()->kernel_paths())
    if (k.fallback) p.warnings.push_back("kernel " + k.weight_type + ": " + k.note);
  if (const device_section* pre = prefill_only_device(p.cfg)) {
    // Its own threads and KV pool: physical prefill/decode separation.
    auto o = backend_options(p.cfg, *pre, resolve_kv_tokens(p.cfg, mc, *pre), p.kernels);
    o.observer = p.observer;
    auto prefill = std::make_unique<cpu_backend>(mc, p.m->weights(), std::move(o));
    // Both sides must speak the same KV: same model file, stream version, shape (and CUDA stack).
    const std::string fp = model_fingerprint(p.m->file());
    device_identity a = device_identity_of("prefill cpu:" + std::to_string(pre->id), *prefill, fp);
    device_identity b = device_identity_of("decode cpu:" + std::to_string(dec.id), *p.device(), fp);
    if (options.amend_identities) options.amend_identities(a, b);
    p.pair = check_pair(a, b);
    if (p.pair.ok) p.devices.add(name_of(*pre), device_role::prefill, std::move(prefill));
    else p.warnings.push_back(p.pair.message);
  }
  if (const device_section* off = offload_only_device(p.cfg)) {
    auto o = backend_options(p.cfg, *off, resolve_kv_tokens(p.cfg, mc, *off), p.kernels);
    p.devices.add(name_of(*off), device_role::offload, std::make_unique<cpu_backend>(mc, p.m->weights(), std::move(o)));
  }
  if (p.cfg.devices.size() > 1) {
    const unsigned hw = std::thread::hardware_concurrency();
    int used = 0;
    for (const auto& d : p.cfg.devices) used += device_threads(p.cfg, d);
    if (hw > 0 && used > static_cast<int>(hw))
      p.warnings.push_back("the devices use " + std::to_string(used) + " kernel threads on " + std::to_string(hw) +
                           " cores: they slow each other down; give each its threads or cores");
  }
  if (options.build_draft) {
    if (auto ok = p.rebuild_draft(); !ok) return ok.err();
  } else {
    p.policy = make_k_policy(p.cfg.speculative, the_device(p.cfg).bandwidth_gbs);
  }
  for (const auto& w : p.warnings) log_warn(w);
  return p;
}

}  // namespace fw
