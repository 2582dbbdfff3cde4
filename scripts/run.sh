#!/usr/bin/env bash
# Installs everything (scripts/setup.sh), builds, and runs the main job on the bundled model:
# the interactive console (chat + runtime commands) on conf/default.toml. Extra arguments go to
# `flywheel console` (e.g. --threads 4, --model FILE). Without a terminal on stdin the console
# reads one command per line from it (scripts/run.sh < session.txt).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/setup.sh"
cd "$root"
exec "$root/build/tools/flywheel" console --config conf/default.toml "$@"
