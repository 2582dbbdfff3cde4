// compute_section: [compute], the CPU kernel thread pool and the kernel plugins that replace
// built-in kernels. Read by runtime/setup. Thread-safety: plain value.
#pragma once

#include <string>
#include <vector>

namespace fw {

struct compute_section {
  int threads = 0;  ///< 0: all cores
  /// quant_kernel plugins (names from [[plugins.load]]) that replace the built-in kernels for
  /// the weight types they handle; empty: built-in kernels only.
  std::vector<std::string> kernel_plugins;
  bool operator==(const compute_section&) const = default;
};

}  // namespace fw
