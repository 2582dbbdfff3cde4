#!/usr/bin/env bash
# Installs everything (scripts/setup.sh), builds, and runs the main job on the bundled model:
# an interactive chat on conf/default.toml's model. Extra arguments go to `flywheel generate`.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/setup.sh"
cd "$root"
if [ $# -eq 0 ]; then
  set -- --chat --temperature 0 --max-tokens 96 --prompt "What is the capital of France? Answer in one sentence."
fi
exec "$root/build/tools/flywheel" generate "$@"
