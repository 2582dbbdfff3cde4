// soak_schedule: which fault the chaos soak (`flywheel bench soak`, tools/bench/bench_soak)
// injects next and when. The kinds come from a shuffled bag refilled when empty, so every kind is
// injected equally often over a run (a kind the run cannot inject, e.g. the prefill node without
// one, is left out of the bag); the gaps between faults are exponential around a mean. Pure: a
// seeded generator, no clock.
// Thread-safety: one owner.
#pragma once

#include <array>
#include <cstdint>
#include <random>
#include <string_view>
#include <vector>

namespace fw::cli {

enum class soak_fault : uint8_t {
  decode_worker,      ///< the decode worker throws before a step (the supervisor restarts it)
  prefill_worker,     ///< the local prefill worker throws before a job
  draft_actor,        ///< the draft actor throws before it answers
  kv_reserve,         ///< a sequence's KV fails to grow (that request fails; the client retries)
  kv_stream,          ///< a remote prefill's KV stream is damaged in transit
  prefill_node_kill,  ///< kill -9 of the prefill node process, restarted on the same port
  client_disconnect,  ///< a client goes away mid-stream
  plugin_reload,      ///< the draft plugin is reloaded through the admin route
  drill,              ///< a telemetry drill replays through the supervisor
};
inline constexpr size_t soak_fault_kinds = 9;
inline constexpr std::array<std::string_view, soak_fault_kinds> soak_fault_names = {
    "decode_worker", "prefill_worker", "draft_actor", "kv_reserve",   "kv_stream",
    "prefill_node_kill", "client_disconnect", "plugin_reload", "drill"};

class soak_schedule {
 public:
  /// `kinds`: the faults this run can inject (none: next() never yields one).
  soak_schedule(std::vector<soak_fault> kinds, double mean_gap_s, uint64_t seed);

  /// Seconds from the last fault to the next one.
  double next_gap_s();
  /// The next fault's kind.
  soak_fault next_kind();
  [[nodiscard]] const std::vector<soak_fault>& kinds() const { return kinds_; }

 private:
  std::vector<soak_fault> kinds_, bag_;
  double mean_gap_s_;
  std::mt19937_64 rng_;
};

}  // namespace fw::cli
