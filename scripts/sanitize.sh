#!/usr/bin/env bash
# The unit tests of the code that parses, computes and decides without actors (tests/sanitize/
# CMakeLists.txt lists the folders: kernels and the thread pool, KV, the scheduler and policies,
# config, text, GGUF, sampling, metrics, the node link's proofs) in instrumented clang builds:
#   scripts/sanitize.sh                 ASan + UBSan in build-fuzz/ (the build of scripts/fuzz.sh:
#                                       every library instrumented; a UBSan report aborts, leaks fail),
#                                       then the engine tests (real CAF actors: the engine, the node
#                                       link plain/sealed/TLS, PD separation);
#                                       tests/sanitize/ubsan.supp names CAF's one header report
#   scripts/sanitize.sh --thread        ThreadSanitizer in build-tsan/, the plugin host's tests too
#                                       (plugins loaded, reloaded and unloaded while threads use them)
#   scripts/sanitize.sh --server [NAME...]  the `flywheel` binary in build-fuzz/ (ASan + UBSan), then
#                                       the server tests (tests/server/test_NAME.py; default: openai_client
#                                       hostile_input fuzz load prometheus nodes tls) against it; every
#                                       report of any flywheel process they start is written to
#                                       build-fuzz/server-reports/ and fails the run. All seven ~12 min;
#                                       CI runs the fast five (all but load and nodes, ~1 min)
#   scripts/sanitize.sh --gtest_filter=kv*   any gtest flags pass through
# CI runs all three (scripts/test.sh). Exit status non-zero on any failing test or sanitizer report.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
command -v clang++ >/dev/null || { echo "sanitize.sh: clang++ not found (scripts/setup.sh installs it)" >&2; exit 2; }
thread=0
server=0
if [[ "${1:-}" == "--thread" ]]; then
  thread=1
  shift
elif [[ "${1:-}" == "--server" ]]; then
  server=1
  shift
fi
if [[ $thread == 1 ]]; then
  out="$root/build-tsan"
  what="ThreadSanitizer"
  flags=(-DFW_TSAN=ON)
else
  out="$root/build-fuzz"
  what="ASan + UBSan"
  flags=(-DFW_FUZZ=ON -DFW_BENCH=OFF)
fi
if [[ ! -f "$out/CMakeCache.txt" ]]; then
  CC=clang CXX=clang++ cmake -S "$root" -B "$out" -DCMAKE_BUILD_TYPE=Release "${flags[@]}" -DFW_BUILD_TESTS=OFF \
    -DFW_ENABLE_CUDA=OFF >/dev/null
fi
targets=(fw_sanitized_tests)
[[ $thread == 1 ]] || targets+=(fw_sanitized_engine_tests)
[[ $server == 0 ]] || targets=(flywheel flywheel-tiny-model)
if ! cmake --build "$out" -j "${FW_JOBS:-2}" --target "${targets[@]}" >"$out/sanitize-build.log" 2>&1; then
  grep -E "error" "$out/sanitize-build.log" | head -20 >&2
  echo "sanitize.sh: the build failed (log: $out/sanitize-build.log)" >&2
  exit 1
fi
ubsan_options="print_stacktrace=1:halt_on_error=1:suppressions=$root/tests/sanitize/ubsan.supp"
if [[ $server == 1 ]]; then
  # The tests start `flywheel serve` (and node pairs) themselves: the sanitizers' options reach every
  # such process through the environment, and each report lands in a file named by its pid.
  python="$root/.venv/bin/python"
  [[ -x $python ]] || { echo "sanitize.sh: $python is missing: run scripts/setup.sh" >&2; exit 2; }
  names=("$@")
  [[ ${#names[@]} -gt 0 ]] || names=(openai_client hostile_input fuzz load prometheus nodes tls)
  reports="$out/server-reports"
  rm -rf "$reports"
  mkdir -p "$reports"
  failed=0
  for n in "${names[@]}"; do
    log="$out/server_$n.log"
    echo "sanitize: ASan + UBSan server test $n"
    if ! FW_FLYWHEEL="$out/tools/flywheel" FW_TINY_MODEL="$out/tools/flywheel-tiny-model" FW_SOURCE_DIR="$root" \
         PYTHONDONTWRITEBYTECODE=1 \
         ASAN_OPTIONS="detect_leaks=1:log_path=$reports/asan" \
         UBSAN_OPTIONS="$ubsan_options:log_path=$reports/ubsan" \
         "$python" "$root/tests/server/test_$n.py" >"$log" 2>&1; then
      echo "sanitize: server test $n FAILED (log: $log)" >&2
      tail -20 "$log" >&2
      failed=1
    fi
  done
  if compgen -G "$reports/*" >/dev/null; then
    echo "sanitize: sanitizer reports from flywheel processes:" >&2
    for f in "$reports"/*; do echo "== $f" >&2; grep -E "ERROR|runtime error|SUMMARY|^    #[0-9] " "$f" | head -20 >&2; done
    exit 1
  fi
  [[ $failed == 0 ]] || exit 1
  echo "sanitize: ${#names[@]} server tests passed, no sanitizer report"
  exit 0
fi
# ThreadSanitizer looks for races: the single-threaded numeric tests (kernels against their
# references, the KV codec's throughput, the metric series' scans) have
# none to find and were 60 of its 79 s. ASan + UBSan keeps them. Any --gtest_filter given replaces this.
filter=()
if [[ $thread == 1 && "$*" != *--gtest_filter* ]]; then
  filter=("--gtest_filter=-attention_test.*:kv_codec_test.throughput*:*vec_dot*:*fw_dot*:metric_series_test.*:quant_ref.*")
fi
# The actor-free unit tests run as FW_JOBS (default 2) gtest shards side by side, a log each (none
# of them times anything it asserts). The engine tests keep one process: their heartbeats and
# deadlines are timed, and two instrumented engines at once would starve each other's.
for t in "${targets[@]}"; do
  shards="${FW_JOBS:-2}"
  if [[ $t == fw_sanitized_tests ]]; then echo "sanitize: $what unit tests"; else echo "sanitize: $what engine tests"; shards=1; fi
  pids=()
  for ((i = 0; i < shards; ++i)); do
    GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$i \
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
    UBSAN_OPTIONS="$ubsan_options" \
    TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
      "$out/tests/sanitize/$t" "${filter[@]}" "$@" >"$out/${t#fw_}.$i.log" 2>&1 &
    pids+=($!)
  done
  failed=0
  for ((i = 0; i < shards; ++i)); do
    log="$out/${t#fw_}.$i.log"
    if wait "${pids[$i]}"; then
      grep -E "^\[  PASSED  \]" "$log" | sed "s/^/  shard $i: /"
    else
      echo "sanitize: FAILED (log: $log)" >&2
      grep -E "FAILED|ERROR: AddressSanitizer|WARNING: ThreadSanitizer|runtime error|SUMMARY" "$log" | head -20 >&2 || true
      failed=1
    fi
  done
  [[ $failed == 0 ]] || exit 1
done
