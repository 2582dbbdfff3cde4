// stream_bench: the machine's read bandwidth as the CPU kernels see it, for the decode bound
// (decode streams every weight once per token, so tokens/s <= bandwidth / bytes per token).
// Reads one buffer with the kernel thread pool (each thread a contiguous slice, like the row
// split of a matrix-vector product) and reports GB/s. Thread-safety: uses the pool; call from the
// pool's owner.
#pragma once

#include <cstddef>

#include "kernels/cpu/thread_pool.hpp"

namespace fw::cpu {

struct stream_result {
  size_t bytes = 0;     ///< buffer size read per pass
  int threads = 0;      ///< threads that read
  int passes = 0;       ///< timed passes (after one untimed warm-up pass)
  double best_gb_s = 0;  ///< fastest pass (the usual STREAM convention)
  double mean_gb_s = 0;  ///< mean over the timed passes
};

/// Allocates and fills a buffer of `bytes` (rounded up to 4 KiB), then reads it `passes` times.
/// A buffer larger than the last-level cache measures DRAM; a smaller one measures cache.
stream_result measure_read_bandwidth(thread_pool& pool, size_t bytes, int passes);

}  // namespace fw::cpu
