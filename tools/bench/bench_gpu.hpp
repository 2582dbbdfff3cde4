// The GPU benchmark behind `flywheel bench --workload gpu` (builds with the CUDA backend; run on a
// GPU host, e.g. by tools/gpu-check.sh). In one run it measures
//  - the device's copy bandwidth (a 2 GiB device-to-device copy, bytes read plus written),
//  - each weight format's matrix-vector product at Llama-3-8B shapes (q|k|v, o, gate|up, down
//    and the output head): achieved GB/s of weight bytes at batch 1 and its share of the copy
//    bandwidth, and the time per product at batch 16,
//  - when the session's device is a CUDA device: the model's decode step at batch 1 (median of
//    steps after a 128-token prompt) against its weight bytes / copy bandwidth.
// A benchmark, not a test: it prints what it measured (and JSON with --json / --out).
#pragma once

#include <nlohmann/json.hpp>

#include "runtime/setup/runtime_parts.hpp"

namespace fw::cli {

struct gpu_bench_options {
  int device = 0;
  int reps = 50;  ///< timed launches per product, after warm-up
};

/// {"device", "copy_gbs", "gemv": [...], "decode": {...}}; an error without a CUDA device or
/// in a build without the CUDA backend.
expected<nlohmann::json> run_gpu_bench(runtime_parts& parts, const gpu_bench_options& o);

void print_gpu_bench(const nlohmann::json& r);

}  // namespace fw::cli
