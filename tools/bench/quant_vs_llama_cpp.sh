#!/usr/bin/env bash
# Quantization quality side by side with llama.cpp on the same 16-bit source (never run in CI):
# llama.cpp (the pinned llama-cpp-python sdist, built with -DGGML_NATIVE=ON) makes an importance
# matrix from flywheel's calibration file, then Q4_0 and Q4_K_M files with `llama-quantize
# --imatrix` from flywheel's f16 export, and measures `llama-perplexity` of f16, Q4_0 and Q4_K_M
# on the held-out text. llama.cpp's Q4_0 file is also measured by `flywheel eval` (flywheel runs
# Q4_0), the same protocol as flywheel's own table (docs/quantization.md).
#   tools/bench/quant_vs_llama_cpp.sh [OUT_DIR]     (default: build/quant-vs-llama; needs OUT_DIR/f16.gguf
#                                                    or makes it; ~15 min the first time: the build)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
# shellcheck source=../../scripts/versions.sh
source scripts/versions.sh
VERSION="${FW_LLAMA_CPP_PYTHON#*==}"
CACHE="${FW_LLAMA_CPP_CACHE:-$HOME/.cache/flywheel/llama.cpp-$VERSION-native}"
BIN="$CACHE/bin"
F=build/tools/flywheel
M="${1:-build/quant-vs-llama}"
JOBS="${FW_JOBS:-2}"
mkdir -p "$M"
if [[ ! -x "$BIN/llama-perplexity" ]]; then
  mkdir -p "$CACHE/src"
  if [[ ! -d "$CACHE/src/llama_cpp_python-$VERSION" ]]; then
    python3 -m pip download "$FW_LLAMA_CPP_PYTHON" --no-binary :all: --no-deps -d "$CACHE/src"
    tar -xzf "$CACHE/src/llama_cpp_python-$VERSION.tar.gz" -C "$CACHE/src"
  fi
  src="$CACHE/src/llama_cpp_python-$VERSION/vendor/llama.cpp"
  cmake -S "$src" -B "$CACHE/build" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF -DGGML_NATIVE=ON \
    -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=OFF >&2
  cmake --build "$CACHE/build" --target llama-quantize llama-imatrix llama-perplexity llama-bench -j "$JOBS" >&2
  mkdir -p "$BIN"
  cp "$CACHE/build/bin/"{llama-quantize,llama-imatrix,llama-perplexity,llama-bench} "$BIN/"
fi
[[ -f "$M/f16.gguf" ]] || $F quantize --scheme f16 --out "$M/f16.gguf"
# The calibration queries as plain text (llama-imatrix reads a text file); the held-out text minus '#' lines.
grep -v '^#' conf/calibration/prompts.txt | sed 's/\\n/\n/g' > "$M/calib.txt"
grep -v '^#' conf/eval/heldout.txt > "$M/heldout.txt"
"$BIN/llama-imatrix" -m "$M/f16.gguf" -f "$M/calib.txt" -o "$M/imatrix.gguf" -c 512 -t 2 > "$M/imatrix.log" 2>&1
for t in Q4_0 Q4_K_M; do
  "$BIN/llama-quantize" --imatrix "$M/imatrix.gguf" "$M/f16.gguf" "$M/llama-$t.gguf" $t > "$M/quantize-$t.log" 2>&1
done
for f in f16 llama-Q4_0 llama-Q4_K_M; do
  "$BIN/llama-perplexity" -m "$M/$f.gguf" -f "$M/heldout.txt" -c 512 -t 2 > "$M/ppl-$f.log" 2>&1
  echo "$f: $(grep -o 'Final estimate: PPL = [0-9.]* +/- [0-9.]*' "$M/ppl-$f.log") ($(du -m "$M/$f.gguf" | cut -f1) MiB)"
done
$F eval --model "$M/llama-Q4_0.gguf" --ref "$M/f16.gguf" --json "$M/e.llama-Q4_0.json" | tee "$M/eval.llama-Q4_0.txt"
