#!/usr/bin/env bash
# Coverage-guided fuzzing of flywheel's parsers (tests/fuzz: libFuzzer, clang, ASan + UBSan).
# Builds the targets in build-fuzz/ (a build of its own: every library they link is instrumented)
# and runs each against its committed seed corpus (tests/fuzz/corpus/<target>) for a bounded time.
#   scripts/fuzz.sh                          every target, 30 s each (CI, scripts/test.sh: 15 s)
#   scripts/fuzz.sh --seconds 3600 gguf      one target for an hour
#   scripts/fuzz.sh --make-seeds             rewrite the library-made seeds (KV streams, a GGUF)
# Targets: gguf, config, openai_request, json_schema, kv_stream, tokenizer, telemetry_trace, calibration,
# node_message, plugin_table; FW_JOBS of them at a time (default 2). Exit status 1 when
# a target finds a crash, a leak, a sanitizer report or a timeout; the input is kept in
# build-fuzz/findings/<target>/.
# Once fixed, add it to tests/fuzz/corpus/<target>/: every corpus file runs first on each run, so
# it stays a regression input. What a run learned (new inputs) stays in build-fuzz/corpus/.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
seconds=30
make_seeds=0
targets=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --seconds) seconds="$2"; shift 2 ;;
    --make-seeds) make_seeds=1; shift ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    -*) echo "fuzz.sh: unknown flag $1" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done
[[ ${#targets[@]} -gt 0 ]] || targets=(gguf config openai_request json_schema kv_stream tokenizer telemetry_trace calibration node_message plugin_table)

command -v clang++ >/dev/null || { echo "fuzz.sh: clang++ not found (scripts/setup.sh installs it)" >&2; exit 2; }
out="$root/build-fuzz"
if [[ ! -f "$out/CMakeCache.txt" ]]; then
  CC=clang CXX=clang++ cmake -S "$root" -B "$out" -DCMAKE_BUILD_TYPE=Release -DFW_FUZZ=ON -DFW_BENCH=OFF -DFW_BUILD_TESTS=OFF \
    -DFW_ENABLE_CUDA=OFF >/dev/null
fi
cmake --build "$out" -j "${FW_JOBS:-2}" --target fuzz_targets 2>&1 | grep -E "error|warning: .*fuzz" || true
[[ -x "$out/tests/fuzz/fuzz_gguf" ]] || { echo "fuzz.sh: the build failed (cmake --build $out --target fuzz_targets)" >&2; exit 1; }
if [[ $make_seeds == 1 ]]; then
  "$out/tests/fuzz/fuzz_make_seeds" "$root/tests/fuzz/corpus"
  exit 0
fi

# One target: its summary on stdout, and its status in findings/<target>.status.
run_target() {
  local t="$1" bin="$out/tests/fuzz/fuzz_$1" log="$out/findings/$1.log"
  echo "fuzz $t: ${seconds}s"
  # New inputs go to the first corpus directory (build-fuzz/corpus), the seeds are only read.
  # UBSan's checks are recoverable in this build (CMakeLists.txt): halt_on_error makes a report a finding.
  if ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 \
     UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:suppressions=$root/tests/sanitize/ubsan.supp" \
     "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=2048 -print_final_stats=1 \
       -artifact_prefix="$out/findings/$t/" "$out/corpus/$t" "$root/tests/fuzz/corpus/$t" >"$log" 2>&1; then
    grep -E "^stat::number_of_executed_units|^stat::peak_rss_mb|cov: " "$log" | tail -3 | sed "s/^/  /"
    echo 0 >"$out/findings/$t.status"
  else
    echo "fuzz $t: FINDING (log: $log)"
    grep -E "ERROR|SUMMARY|Test unit written" "$log" | head -5 || true
    echo 1 >"$out/findings/$t.status"
  fi
}

# FW_JOBS targets at a time (default: 2, this project's machines' cores).
for t in "${targets[@]}"; do
  [[ -x "$out/tests/fuzz/fuzz_$t" ]] || { echo "fuzz.sh: no target $t" >&2; exit 2; }
  mkdir -p "$out/corpus/$t" "$out/findings/$t"
  rm -f "$out/findings/$t.status"
done
for t in "${targets[@]}"; do
  while [[ $(jobs -rp | wc -l) -ge ${FW_JOBS:-2} ]]; do wait -n || true; done
  run_target "$t" >"$out/findings/$t.summary" 2>&1 &
done
wait
failed=()
for t in "${targets[@]}"; do
  if [[ "$(cat "$out/findings/$t.status" 2>/dev/null)" == 0 ]]; then
    cat "$out/findings/$t.summary"
  else
    cat "$out/findings/$t.summary" >&2
    failed+=("$t")
  fi
done
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "fuzz.sh: findings in ${failed[*]}" >&2
  exit 1
fi
echo "fuzz.sh: ${#targets[@]} targets, no findings"
