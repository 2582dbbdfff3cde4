#!/usr/bin/env bash
# llama.cpp's OpenAI-compatible server next to flywheel's, for `flywheel bench ablation --peer`
# and `flywheel bench --server` (a benchmark peer, never CI):
#
#   tools/bench/llama_server.sh [--type Q4_0] [--model FILE] [--threads 2] [--port 8081]
#                               [--slots 16] [--ctx-per-slot 2048] [--build-only]
#
# Builds llama-server and llama-quantize once (tools/bench/llama_cpp_peer.sh: the pinned
# llama-cpp-python sdist, -DGGML_NATIVE=ON), makes a --type copy of the bundled model with
# llama-quantize --allow-requantize (Q4_0: llama.cpp's fastest format for this model on CPUs;
# Q4_1: the bundled file itself), and runs llama-server in the foreground on 127.0.0.1:PORT with
# --slots parallel sequences of --ctx-per-slot tokens each and continuous batching. Then, in
# another shell:
#   build/tools/flywheel bench ablation --peer http://127.0.0.1:8081
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# shellcheck source=../../scripts/versions.sh
source "$ROOT/scripts/versions.sh"
# shellcheck source=llama_cpp_peer.sh
source "$ROOT/tools/bench/llama_cpp_peer.sh"

TYPE="Q4_0"
MODEL=""
THREADS=2
PORT=8081
SLOTS=16
CTX_PER_SLOT=2048
BUILD_ONLY=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --type) TYPE="$2"; shift 2 ;;
    --model) MODEL="$2"; shift 2 ;;
    --threads) THREADS="$2"; shift 2 ;;
    --port) PORT="$2"; shift 2 ;;
    --slots) SLOTS="$2"; shift 2 ;;
    --ctx-per-slot) CTX_PER_SLOT="$2"; shift 2 ;;
    --build-only) BUILD_ONLY=1; shift ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done

build_llama_cpp llama-server llama-quantize
[[ $BUILD_ONLY == 1 ]] && exit 0

BUNDLED="$ROOT/models/$FW_MODEL_FILE"
if [[ -z "$MODEL" ]]; then
  if [[ "$BUNDLED" == *".$TYPE.gguf" ]]; then
    MODEL="$BUNDLED"
  else
    MODEL="$LLAMA_CACHE/models/${FW_MODEL_FILE%.*.gguf}.$TYPE.gguf"
    if [[ ! -f "$MODEL" ]]; then
      [[ -f "$BUNDLED" ]] || { echo "model missing: $BUNDLED (run scripts/setup.sh)" >&2; exit 1; }
      mkdir -p "$LLAMA_CACHE/models"
      "$LLAMA_BIN/llama-quantize" --allow-requantize "$BUNDLED" "$MODEL.tmp" "$TYPE" >/dev/null 2>&1 ||
        { echo "llama-quantize to $TYPE failed" >&2; exit 1; }
      mv "$MODEL.tmp" "$MODEL"
    fi
  fi
fi
echo "llama-server $LLAMA_VERSION: $MODEL, $THREADS threads, $SLOTS slots of $CTX_PER_SLOT tokens, http://127.0.0.1:$PORT" >&2
exec "$LLAMA_BIN/llama-server" -m "$MODEL" -t "$THREADS" -tb "$THREADS" --host 127.0.0.1 --port "$PORT" \
  -np "$SLOTS" -c $((SLOTS * CTX_PER_SLOT)) -cb --no-webui
