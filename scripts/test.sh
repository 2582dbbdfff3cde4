#!/usr/bin/env bash
# Installs everything (scripts/setup.sh), builds, and runs the whole test suite with ctest.
# GPU tests compile everywhere and skip at run time with a reason when no device exists.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# The tests fit the small feature maps they need themselves.
"$root/scripts/setup.sh"
cd "$root/build"
ctest --output-on-failure --timeout 600 -j2 "$@"
