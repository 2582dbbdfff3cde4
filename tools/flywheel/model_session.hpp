// model_session: the effective config plus a loaded model and CPU backend, built from the common
// CLI flags (--config, --model, --threads, --ctx-size). Shared by the subcommands that run the
// model; they read their own sections (e.g. cfg.sampling for defaults) from cfg.
// Flags given on the command line override the config file's values; without --config the
// built-in defaults apply (fw::config{}).
#pragma once

#include <memory>
#include <string>

#include "runtime/config.hpp"
#include "runtime/cpu_backend.hpp"
#include "runtime/drafter.hpp"
#include "runtime/k_policy.hpp"
#include "runtime/model.hpp"
#include "runtime/plugin_host.hpp"
#include "tools/flywheel/arg_parser.hpp"

namespace fw::cli {

struct model_session {
  config cfg;  ///< the effective configuration (file or defaults, then flags)
  std::shared_ptr<const model> m;
  std::unique_ptr<cpu_backend> backend;
  uint32_t n_ctx = 0;  ///< the context window in use (cfg.model.ctx_size resolved against the model)
  std::unique_ptr<plugin_host> plugins;  ///< [plugins] loaded at open
  std::unique_ptr<drafter> draft;  ///< [speculative] draft, null for plain decoding
  k_policy policy;                 ///< [speculative] k policy

  /// Builds (or drops) the draft for cfg.speculative; used at open and when settings change.
  expected<void> rebuild_draft();

  /// Declares --config, --model, --threads, --ctx-size and the speculative-decoding flags
  /// (--draft, --draft-model, --draft-k, --draft-layers, --draft-quant) on a parser.
  static void declare_flags(arg_parser& args);
  /// The config of --config FILE (or the built-in defaults) with --model, --threads and --ctx-size
  /// applied when given; does not load the model. Errors name the flag or file:line:column.
  static expected<config> load_config(const arg_parser& args);
  /// load_config(), then loads the model and builds the backend; prints the kernel report to stderr
  /// when verbose.
  static expected<model_session> open(const arg_parser& args, bool verbose);
};

/// The quant_kernel plugins [compute] kernel_plugins names, created from the host's libraries.
expected<std::vector<std::shared_ptr<quant_kernel_plugin>>> make_kernel_plugins(const config& cfg, plugin_host& host);

}  // namespace fw::cli
