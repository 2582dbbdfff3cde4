// alerts_section: [alerts], the thresholds of SPEC.md's alert rules (the KV-cache miss-rate alert
// comes with prefix caching, which measures it). The server exports
// flywheel:alerts_firing{alert} from them and conf/prometheus/flywheel_rules.yml encodes the same
// defaults for a Prometheus that scrapes it. Thread-safety: plain value.
#pragma once

namespace fw {

struct alerts_section {
  double min_acceptance_rate = 0.6;      ///< speculative acceptance below this fires
  double max_prefill_to_decode_s = 0.01; ///< mean prefill-done -> first-decode-step latency above this fires
  double ttft_p99_slo_s = 2.0;           ///< P99 time to first token above this fires
  double tpot_p99_slo_s = 0.2;           ///< P99 time per output token above this fires
  double window_s = 60;                  ///< the alerts look at the last window_s seconds
  bool operator==(const alerts_section&) const = default;
};

}  // namespace fw
