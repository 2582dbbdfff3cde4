#!/usr/bin/env bash
# Installs everything (scripts/setup.sh), builds, and runs the whole test suite with ctest.
# GPU tests compile everywhere and skip at run time with a reason when no device exists.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# The tests fit the small feature map they need themselves; the full fit (minutes) serves the
# console's --draft feature|hybrid and is left to scripts/run.sh.
FW_SKIP_FEATURE_FIT=1 "$root/scripts/setup.sh"
cd "$root/build"
ctest --output-on-failure --timeout 600 -j2 "$@"
