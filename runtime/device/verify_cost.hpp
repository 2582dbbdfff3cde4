// calibrate_verify_cost: what verifying k drafted tokens costs on a backend, measured once at
// start: the time of one forward over k + 1 rows relative to one row, for k = 0..max_k, after a
// short context. The cost-aware k policy (k_policy_config::verify_cost) uses it to pick k: on a
// CPU whose multi-row steps are compute-bound extra rows are dear, on a GPU nearly free.
// Thread-safety: uses the backend like any forward caller.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/device/backend.hpp"
#include "runtime/base/expected.hpp"

namespace fw {

/// cost[k] = time(k + 1 rows) / time(1 row), cost[0] = 1; best of `reps` runs each; costs are
/// made non-decreasing (more rows never cost less; a shorter best time is noise). Needs
/// context + max_k + 1 free KV tokens in the backend's pool (errc::out_of_memory otherwise) and a
/// vocabulary of at least 100 tokens. Leaves the pool as it found it.
expected<std::vector<double>> calibrate_verify_cost(backend& b, int max_k = 8, int context = 64, int reps = 5);

}  // namespace fw
