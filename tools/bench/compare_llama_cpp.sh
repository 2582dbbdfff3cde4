#!/usr/bin/env bash
# Side-by-side CPU benchmark: flywheel vs llama.cpp on the same GGUF files, same threads, in one
# session (runs alternate so that machine drift hits both). Never run in CI.
#
#   tools/bench/compare_llama_cpp.sh [--threads 1,2] [--reps 3] [--types Q4_1,Q8_0,F16]
#                                    [--depth 0,512] [--out bench-compare.json] [--build-only]
#                                    [--model FILE --label NAME] [--peer-bin DIR]
#                                    [--prompt-tokens 128,512] [--gen-tokens 128]
#
# --model FILE --label NAME: benchmark this one file (e.g. a large-shape random model from
# flywheel-tiny-model --shape qwen2-7b) under the row label NAME instead of the bundled model's
# copies. --peer-bin DIR: a llama-bench already built elsewhere (e.g. the -DGGML_NATIVE=ON build
# of tools/bench/quant_vs_llama_cpp.sh).
#
# Builds llama.cpp's llama-bench and llama-quantize from the PyPI sdist of llama-cpp-python (the
# version pinned in scripts/versions.sh; it vendors llama.cpp) into
# ${FW_LLAMA_CPP_CACHE:-~/.cache/flywheel/llama.cpp-<version>-native}, once, with
# -DGGML_NATIVE=ON: the peer at its best on this CPU (on an Intel Xeon with AMX, its AMX kernel
# dies with SIGILL at the first prompt: use FW_LLAMA_CPP_NATIVE=0 there). FW_LLAMA_CPP_NATIVE=0 builds the portable
# AVX2/AVX-512/VNNI/BF16 set without -march=native instead (AMX off). Q8_0 and F16 copies of the bundled Q4_1 model are made with
# llama-quantize --allow-requantize. flywheel must already be built (FW_BUILD_DIR, default build/).
#
# The AVX2 comparison on an AVX-512 host (a stand-in until an AVX2-only host measures it):
#   FW_SIMD=avx2 FW_LLAMA_CPP_NATIVE=avx2 tools/bench/compare_llama_cpp.sh --types Q4_0,Q4_1
# caps flywheel at its AVX2 kernels and builds the peer with AVX2 + FMA + F16C only.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# shellcheck source=../../scripts/versions.sh
source "$ROOT/scripts/versions.sh"

THREADS="1,2"
REPS=3
TYPES="Q4_1,Q8_0,F16"
DEPTH="0,512"
OUT="$ROOT/bench-compare.json"
BUILD_ONLY=0
ONE_MODEL=""
LABEL=""
PEER_BIN=""
PP="128,512"
TG="128"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --threads) THREADS="$2"; shift 2 ;;
    --reps) REPS="$2"; shift 2 ;;
    --types) TYPES="$2"; shift 2 ;;
    --depth) DEPTH="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    --build-only) BUILD_ONLY=1; shift ;;
    --model) ONE_MODEL="$2"; shift 2 ;;
    --label) LABEL="$2"; shift 2 ;;
    --peer-bin) PEER_BIN="$2"; shift 2 ;;
    --prompt-tokens) PP="$2"; shift 2 ;;
    --gen-tokens) TG="$2"; shift 2 ;;
    -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done

# shellcheck source=llama_cpp_peer.sh
source "$ROOT/tools/bench/llama_cpp_peer.sh"
VERSION="$LLAMA_VERSION"
CACHE="$LLAMA_CACHE"
BIN="$LLAMA_BIN"
FLYWHEEL="${FW_BUILD_DIR:-$ROOT/build}/tools/flywheel"
MODEL="$ROOT/models/$FW_MODEL_FILE"

if [[ -n "$PEER_BIN" ]]; then
  BIN="$PEER_BIN"
  [[ -x "$BIN/llama-bench" ]] || { echo "no llama-bench in $BIN" >&2; exit 1; }
else
  build_llama_cpp llama-bench llama-quantize
fi
[[ $BUILD_ONLY == 1 ]] && exit 0

[[ -x "$FLYWHEEL" ]] || { echo "flywheel not built at $FLYWHEEL" >&2; exit 1; }
[[ -f "$MODEL" ]] || { echo "model missing: $MODEL (run scripts/setup.sh)" >&2; exit 1; }

# The model files: the bundled one, and requantized copies in the cache.
declare -A FILES
if [[ -n "$ONE_MODEL" ]]; then
  LABEL="${LABEL:-$(basename "$ONE_MODEL" .gguf)}"
  TYPES="$LABEL"
  FILES[$LABEL]="$ONE_MODEL"
fi
for t in ${TYPES//,/ }; do
  [[ -n "${FILES[$t]:-}" ]] && continue
  if [[ "$MODEL" == *".$t.gguf" ]]; then
    FILES[$t]="$MODEL"
    continue
  fi
  f="$CACHE/models/${FW_MODEL_FILE%.*.gguf}.$t.gguf"
  if [[ ! -f "$f" ]]; then
    mkdir -p "$CACHE/models"
    "$BIN/llama-quantize" --allow-requantize "$MODEL" "$f.tmp" "$t" >/dev/null 2>&1 \
      || { echo "llama-quantize to $t failed" >&2; exit 1; }
    mv "$f.tmp" "$f"
  fi
  FILES[$t]="$f"
done

RAW="$(mktemp -d)"
trap 'rm -rf "$RAW"' EXIT
echo "host: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cpus, $(grep -qw avx512f /proc/cpuinfo && echo AVX-512 || echo AVX2-only); flywheel SIMD cap: ${FW_SIMD:-none}; peer: $LLAMA_CACHE" >&2
# Other work on the machine skews both engines (unevenly): say so.
check_load() {
  local load
  load="$(cut -d' ' -f1 /proc/loadavg)"
  if awk -v l="$load" 'BEGIN { exit !(l > 0.5) }'; then
    echo "warning: load average $load before this run: the machine is busy, numbers will be noisy" >&2
  fi
}
for t in ${TYPES//,/ }; do
  for th in ${THREADS//,/ }; do
    check_load
    echo "== $t, $th thread(s): llama.cpp" >&2
    "$BIN/llama-bench" -m "${FILES[$t]}" -p "$PP" -n "$TG" -d "$DEPTH" -t "$th" -r "$REPS" -o json \
      2>/dev/null > "$RAW/llama-$t-$th.json"
    echo "== $t, $th thread(s): flywheel" >&2
    "$FLYWHEEL" bench --model "${FILES[$t]}" --threads "$th" --prompt-tokens "$PP" \
      --gen-tokens "$TG" --depth "$DEPTH" --reps "$REPS" --json > "$RAW/flywheel-$t-$th.json"
  done
done
python3 "$ROOT/tools/bench/compare_table.py" --raw "$RAW" --types "$TYPES" --threads "$THREADS" \
  --peer-version "$VERSION" --out "$OUT"
