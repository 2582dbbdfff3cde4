#!/usr/bin/env bash
# The unit tests of the code that parses, computes and decides without actors (tests/fuzz/
# CMakeLists.txt lists the folders: kernels, KV, the scheduler and policies, config, text, GGUF,
# sampling, metrics, the node link's proofs) in the instrumented clang build of scripts/fuzz.sh
# (build-fuzz/: ASan + UBSan over every library they link; a UBSan report aborts, leaks fail).
#   scripts/sanitize.sh                 build and run them (CI: scripts/test.sh)
#   scripts/sanitize.sh --gtest_filter=kv*   any gtest flags pass through
# Exit status non-zero on any failing test or sanitizer report.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
command -v clang++ >/dev/null || { echo "sanitize.sh: clang++ not found (scripts/setup.sh installs it)" >&2; exit 2; }
out="$root/build-fuzz"
if [[ ! -f "$out/CMakeCache.txt" ]]; then
  CC=clang CXX=clang++ cmake -S "$root" -B "$out" -DCMAKE_BUILD_TYPE=Release -DFW_FUZZ=ON -DFW_BUILD_TESTS=OFF \
    -DFW_ENABLE_CUDA=OFF >/dev/null
fi
if ! cmake --build "$out" -j "${FW_JOBS:-2}" --target fw_sanitized_tests >"$out/sanitize-build.log" 2>&1; then
  grep -E "error" "$out/sanitize-build.log" | head -20 >&2
  echo "sanitize.sh: the build failed (log: $out/sanitize-build.log)" >&2
  exit 1
fi
echo "sanitize: ASan + UBSan unit tests"
log="$out/sanitize.log"
if ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
   "$out/tests/fuzz/fw_sanitized_tests" "$@" >"$log" 2>&1; then
  grep -E "^\[  PASSED  \]" "$log" | sed "s/^/  /"
else
  echo "sanitize: FAILED (log: $log)" >&2
  grep -E "FAILED|ERROR: AddressSanitizer|runtime error|SUMMARY" "$log" | head -20 >&2 || true
  exit 1
fi
