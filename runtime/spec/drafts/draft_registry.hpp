// draft_registry: one factory per draft kind ([speculative] draft), so the kinds are listed in
// one place (config's draft_kind) and built in one place (here), never by a string if-chain.
// register_builtin_drafts() adds flywheel's own kinds; runtime/setup adds "plugin" (a
// draft_model plugin through the plugin host) and gives each factory what it needs through a
// draft_context: the target model and backend, the kernel threads drafts compute on, and a way
// to build a backend for a separate draft model (setup knows the devices; drafts do not).
// Thread-safety: build at start-up, then read-only.
#pragma once

#include <functional>
#include <map>
#include <memory>

#include "kernels/cpu/thread_pool.hpp"
#include "runtime/base/expected.hpp"
#include "runtime/config/sections/speculative_section.hpp"
#include "runtime/device/backend.hpp"
#include "runtime/model/model.hpp"
#include "runtime/spec/drafts/drafter.hpp"

namespace fw {

/// What a draft factory may use.
struct draft_context {
  const speculative_section* spec = nullptr;
  std::shared_ptr<const model> target;
  backend* target_backend = nullptr;
  /// Kernel threads a CPU-side draft computes on (the target's pool: drafting and verifying
  /// never overlap).
  std::shared_ptr<cpu::thread_pool> threads;
  /// KV tokens a draft with its own pool may hold.
  uint32_t kv_tokens = 0;
  /// A backend for a separate draft model (its own KV pool of kv_tokens), sharing `threads`.
  std::function<expected<std::unique_ptr<backend>>(const model& draft, uint32_t kv_tokens)> make_backend;
};

using draft_factory = std::function<expected<std::unique_ptr<drafter>>(const draft_context&)>;

class draft_registry {
 public:
  /// Registers (or replaces) the factory of a kind.
  void add(draft_kind kind, draft_factory factory) { factories_[kind] = std::move(factory); }
  [[nodiscard]] bool has(draft_kind kind) const { return factories_.count(kind) > 0; }

  /// The draft ctx.spec asks for; nullptr for draft = "none". errc::unsupported for a kind with
  /// no factory; factory errors are prefixed with the draft's name.
  [[nodiscard]] expected<std::unique_ptr<drafter>> make(const draft_context& ctx) const;

 private:
  std::map<draft_kind, draft_factory> factories_;
};

/// ngram, feature, hybrid, layer-skip, self-quant and model.
void register_builtin_drafts(draft_registry& registry);

}  // namespace fw
