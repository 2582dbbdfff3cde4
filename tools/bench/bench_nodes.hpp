// The several-machines benchmark behind `flywheel bench --workload nodes`: a prefill node and a
// decode node in this process, each with its own CAF actor system and network layer, connected
// over a real loopback TCP connection exactly as two hosts would be (built through the
// composition root). It measures
//  - KV transfer: for each prompt length, the kv_codec stream's bytes, the prefill-to-decode
//    latency (round trip minus the prefill node's forward passes) split into encode, network and
//    decode, and a raw TCP copy of the same number of bytes over loopback in the same run (one
//    connection, the same chunk size, into one buffer): throughput of each and their ratios;
//  - the share of request time spent in transfer for the given generation lengths, with a
//    one-node engine (local prefill) on the same requests: TTFT, end-to-end time and whether the
//    greedy tokens are identical.
// A benchmark, not a test: it prints what it measured.
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "runtime/setup/runtime_parts.hpp"

namespace fw::cli {

struct nodes_bench_options {
  std::vector<int> transfer_prompts = {256, 1024, 2048};  ///< prompt tokens of the transfer runs
  int reps = 5;                                           ///< transfer runs per length (median)
  int gen_prompt = 512;                                   ///< prompt tokens of the generation runs
  std::vector<int> gen_tokens = {256, 1024};              ///< tokens each generation run decodes
  uint64_t seed = 11;
};

/// {"transfer": [...], "generation": [...], "chunk_bytes", "wire"}.
expected<nlohmann::json> run_nodes_bench(const runtime_parts& parts, const nodes_bench_options& o);

/// Prints the two tables of a run_nodes_bench result.
void print_nodes_bench(const nlohmann::json& r);

}  // namespace fw::cli
