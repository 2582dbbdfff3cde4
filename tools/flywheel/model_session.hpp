// model_session: the command-line side of the composition root for the subcommands that run a
// model. declare_flags() adds the common flags (--config, --model, --threads, --ctx-size and the
// speculative-decoding flags); load_config() turns them into a config (flags override the
// file, with the file's checks; without --config the built-in defaults apply); open() hands that
// config to runtime/setup's build_runtime(), which builds the model, plugins, backend and draft.
#pragma once

#include "runtime/config/config.hpp"
#include "runtime/setup/runtime_parts.hpp"
#include "tools/flywheel/arg_parser.hpp"

namespace fw::cli {

struct model_session {
  /// Declares --config, --model, --threads, --ctx-size and the speculative-decoding flags
  /// (--draft, --draft-model, --feature-map, --draft-k, --draft-layers, --draft-quant).
  static void declare_flags(arg_parser& args);
  /// The config of --config FILE (or the built-in defaults) with the flags applied; does not
  /// load the model. Errors name the flag or file:line:column.
  static expected<config> load_config(const arg_parser& args);
  /// load_config(), then build_runtime(); prints the draft and the kernel report to stderr when
  /// verbose.
  static expected<runtime_parts> open(const arg_parser& args, bool verbose, const build_options& options = {});
};

}  // namespace fw::cli
