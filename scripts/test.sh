#!/usr/bin/env bash
# Installs everything (scripts/setup.sh), builds, and runs the whole test suite with ctest.
# GPU tests compile everywhere and skip at run time with a reason when no device exists. Then the
# actor-free unit tests and the engine tests run again under ASan + UBSan, the actor-free ones under
# ThreadSanitizer (scripts/sanitize.sh, scripts/sanitize.sh --thread), and every libFuzzer target
# runs 20 s (scripts/fuzz.sh). Those three builds start at nice 19 beside ctest (in the CPU time the
# server tests leave idle), so that CI stays within its 30 minutes;
# FW_SKIP_FUZZ=1 skips all three, FW_FUZZ_SECONDS sets the time.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# The tests fit the small feature maps they need themselves.
"$root/scripts/setup.sh"
cd "$root/build"
# The instrumented builds (ASan + UBSan, the fuzz targets, TSan) start now at nice 19, in a process
# group of their own: they take the CPU that ctest leaves idle (the server tests mostly wait on
# sockets) and are mostly done when ctest ends. The runs below rebuild whatever is left and report
# any build error themselves.
ahead=""
if [ "${FW_SKIP_FUZZ:-0}" != 1 ]; then
  setsid nice -n 19 bash -c '"$1/scripts/sanitize.sh" --build-only && "$1/scripts/fuzz.sh" --build-only &&
    "$1/scripts/sanitize.sh" --thread --build-only' _ "$root" >"$root/build/build-ahead.log" 2>&1 &
  ahead=$!
  trap '[ -n "$ahead" ] && kill -- "-$ahead" 2>/dev/null || true' EXIT
fi
ctest --output-on-failure --timeout 600 -j2 "$@"
if [ -n "$ahead" ]; then
  wait "$ahead" || true
  ahead=""
fi
# Coverage-guided fuzzing of the parsers, bounded (tests/fuzz; scripts/fuzz.sh --seconds N for longer).
# The same instrumented clang build (build-fuzz/) runs the unit tests of the actor-free code first.
[ "${FW_SKIP_FUZZ:-0}" = 1 ] || "$root/scripts/sanitize.sh"
[ "${FW_SKIP_FUZZ:-0}" = 1 ] || "$root/scripts/sanitize.sh" --thread
[ "${FW_SKIP_FUZZ:-0}" = 1 ] || "$root/scripts/fuzz.sh" --seconds "${FW_FUZZ_SECONDS:-20}"
