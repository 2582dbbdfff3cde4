#!/usr/bin/env bash
# Installs everything (scripts/setup.sh), builds, and runs the whole test suite with ctest.
# GPU tests compile everywhere and skip at run time with a reason when no device exists. Then the
# actor-free unit tests and the engine tests run again under ASan + UBSan (scripts/sanitize.sh),
# the server's fast tests against an ASan + UBSan `flywheel` (scripts/sanitize.sh --server NAME...;
# the load, nodes and soak tests stay Release-only: timed windows), the actor-free tests under
# ThreadSanitizer (scripts/sanitize.sh --thread), and every libFuzzer target runs 15 s
# (scripts/fuzz.sh); FW_SKIP_FUZZ=1 skips all four, FW_FUZZ_SECONDS sets the time.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# The tests fit the small feature maps they need themselves.
"$root/scripts/setup.sh"
cd "$root/build"
# A failure's own lines are printed again at the very end (the last lines of a CI log are often
# all a reader gets): each failed test's last 25 lines of output, from ctest's log.
status=0
ctest --output-on-failure --timeout 600 -j2 "$@" || status=$?
if [ "$status" -ne 0 ]; then
  awk -v n=25 '
    /^<end of output>$/ { inside = 0; next }
    inside { buf[c++] = $0; next }
    /^[0-9]+\/[0-9]+ Testing: / { name = $3 }
    /^Output:$/ { getline; inside = 1; c = 0; split("", buf); next }
    /^Test Failed\.|^Test Fail Reason:/ {
      print "---- " name " failed; the last lines of its output:"
      for (i = (c > n ? c - n : 0); i < c; i++) print buf[i]
    }' Testing/Temporary/LastTest.log || true
  exit "$status"
fi
# Coverage-guided fuzzing of the parsers, bounded (tests/fuzz; scripts/fuzz.sh --seconds N for longer).
# The same instrumented clang build (build-fuzz/) runs the unit tests of the actor-free code first.
[ "${FW_SKIP_FUZZ:-0}" = 1 ] || "$root/scripts/sanitize.sh"
[ "${FW_SKIP_FUZZ:-0}" = 1 ] || "$root/scripts/sanitize.sh" --server openai_client hostile_input fuzz prometheus tls
[ "${FW_SKIP_FUZZ:-0}" = 1 ] || "$root/scripts/sanitize.sh" --thread
[ "${FW_SKIP_FUZZ:-0}" = 1 ] || "$root/scripts/fuzz.sh" --seconds "${FW_FUZZ_SECONDS:-15}"
