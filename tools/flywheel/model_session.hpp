// model_session: a loaded model plus a CPU backend, built from common CLI flags
// (--model, --threads, --ctx-size). Shared by the subcommands that run the model.
#pragma once

#include <memory>
#include <string>

#include "runtime/cpu_backend.hpp"
#include "runtime/model.hpp"
#include "tools/flywheel/arg_parser.hpp"

namespace fw::cli {

struct model_session {
  std::shared_ptr<const model> m;
  std::unique_ptr<cpu_backend> backend;
  uint32_t n_ctx = 0;

  /// Declares --model, --threads, --ctx-size on a parser.
  static void declare_flags(arg_parser& args);
  /// Loads the model and builds the backend; prints the kernel report to stderr when verbose.
  static expected<model_session> open(const arg_parser& args, bool verbose);
};

}  // namespace fw::cli
