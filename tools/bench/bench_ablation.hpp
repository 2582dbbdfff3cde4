// The seed's ablation through the server, behind `flywheel bench ablation`: one workload
// (tools/bench/workload_file; conf/workloads/customer_service.jsonl) replayed with the same
// arrival trace through a real `flywheel serve` child per configuration, each derived from the
// user's config file:
//   baseline   16-bit reference weights, no speculation, co-located (whole prompts, first come
//              first served), no prefix cache
//   +quant     the weights quantized (W8A8 / W4A16 calibrated on the workload's own queries, or a
//              given file) - rollout stage 1
//   +spec      the baseline with a draft (the config's, else ngram) and adaptive k
//   +pd        the baseline with prefill/decode separation: decode priority, prefills shortest
//              first in slices, the prefix cache, and the config's devices (physical / offload
//              when it has them)
//   quant+spec rollout stage 2
//   quant+pd   all but speculation (does the draft pay on top of the other two?)
//   all three  stage 3 (4 with the config's devices)
// and any other OpenAI-compatible server (--peer) with the same client and trace. Per
// configuration and rate: trace_replay's latency figures per class, goodput at the SLO, and from
// the server's /metrics the speculative acceptance, the share of prompt tokens the prefix cache served and the
// prefill-to-decode latency; its peak resident memory; and the quantized file's perplexity
// against the 16-bit weights on the workload's long texts. With several rates (a sweep) each
// configuration also gets the highest rate at which slo_share of its requests meet the SLO.
// A benchmark, not a test: it starts processes and takes minutes.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/base/expected.hpp"
#include "tools/bench/trace_replay.hpp"

namespace fw::cli {

struct ablation_options {
  std::string exe;                   ///< the flywheel executable (serve, quantize, eval)
  std::string config_path;           ///< the base configuration
  std::string workload_path;
  std::vector<double> rates = {1};   ///< arrivals per second; several: a sweep
  double duration_s = 60;            ///< seconds of arrivals per rate
  double drain_s = 60;               ///< then open requests get this long
  slo target;
  double slo_share = 0.8;            ///< a sweep's rate "meets the SLO" when this share of requests do
  std::string out_dir = "ablation";  ///< configs/, logs/, ablation.json, ablation.svg
  std::string cache_dir = "models/ablation";  ///< the 16-bit and quantized files (made once, reused)
  std::string quant = "w8a8";        ///< w8a8 | w4a16 | a GGUF file
  std::string draft;                 ///< "" : the config's draft, ngram when it has none
  std::vector<std::string> only;     ///< configuration names to run; empty: all
  std::vector<std::string> peers;    ///< other servers: http://HOST:PORT
  double temperature = 0;
  uint64_t seed = 0;                 ///< arrivals and the first line; 0: a new one each run
  int quality_chunks = 4;            ///< 512-token chunks of the perplexity text (0: skip)
};

/// The configurations' names in table order.
const std::vector<std::string>& ablation_config_names();

expected<nlohmann::json> run_ablation(const ablation_options& o);

}  // namespace fw::cli
