// bench_soak: `flywheel bench soak`, the chaos soak. The user's config serves the shipped
// customer-service workload (or theirs) through the real OpenAI server on loopback, as a decode
// node whose prompts go to a prefill node in a child process, while a driver injects faults
// at random (tools/bench/soak_schedule): the decode, prefill and draft workers die, a sequence's
// KV fails to grow, a KV stream is damaged in transit, the prefill node is killed with SIGKILL and
// restarted, clients go away mid-stream, the draft plugin is reloaded, a telemetry drill plays.
// Every request is streamed and compared with the tokens an undisturbed greedy run gave before
// the faults began; a request that fails is retried (3 times). The verdict: no request lost (none
// changed, none hung, none failed without a clear error), KV blocks, connections and file
// descriptors back to their idle counts, resident memory within a bound of its warm-up value.
// The report counts requests, faults per kind, and the requests in flight at each kind's faults
// that still completed unchanged.
// Thread-safety: run_soak from one thread (it starts its own).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/base/expected.hpp"

namespace fw::cli {

struct soak_options {
  std::string exe;            ///< the flywheel executable (the prefill node's process)
  std::string config_path;    ///< the user's config: model, KV, scheduler, plugins...
  std::string workload_path;  ///< JSONL (workload_file)
  double duration_s = 600;    ///< of arrivals and faults
  double rate = 2;            ///< mean arrivals per second (Poisson)
  double fault_gap_s = 0.8;   ///< mean seconds between faults
  int max_tokens = 32;        ///< each request's max_tokens, at most this
  size_t prompts = 40;        ///< distinct workload lines used (their reference run first)
  uint64_t seed = 1;
  bool prefill_node = true;   ///< a prefill node in a child process (else one process)
  double rss_bound = 0.10;    ///< allowed resident-memory growth after warm-up (share)
  double hang_s = 120;        ///< a request without its end this long is hung (lost)
  std::string work_dir = "soak";  ///< configs and the prefill node's log
  std::vector<std::string> faults;  ///< the kinds to inject (soak_fault_names); empty: every kind the run can
};

/// Runs the soak; `progress` gets a line now and then. The JSON has "verdict" ("pass" or "fail")
/// and "problems" (why not).
expected<nlohmann::json> run_soak(const soak_options& o, const std::function<void(const std::string&)>& progress);

void print_soak(const nlohmann::json& r);

}  // namespace fw::cli
