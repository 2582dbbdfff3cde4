#!/usr/bin/env bash
# The quantization table of docs/quantization.md: the bundled model exported to f16, then
# q8_0 / q4_0 (round-to-nearest), W8A8 and W4A16 (calibrated, W4A16 also with GPTQ, and --method rtn) and mixed under a
# 101 MiB budget (llama.cpp Q4_K_M's size); each evaluated against the f16 export on conf/eval/heldout.txt, then timed
# together with `flywheel bench --models`. About 25 minutes on 2 cores. Never run in CI.
#   tools/bench/quant_table.sh [OUT_DIR]      (default: build/quant-table)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
F=build/tools/flywheel
M="${1:-build/quant-table}"
CALIB=conf/calibration/prompts.txt
mkdir -p "$M"
$F quantize --scheme f16 --out "$M/f16.gguf"
for s in q8_0 q4_0; do $F quantize --model "$M/f16.gguf" --scheme $s --out "$M/$s.gguf"; done
$F quantize --model "$M/f16.gguf" --scheme w8a8 --calib $CALIB --out "$M/w8a8.gguf" --json "$M/q.w8a8.json"
$F quantize --model "$M/f16.gguf" --scheme w8a8 --method rtn --out "$M/w8a8-rtn.gguf"
$F quantize --model "$M/f16.gguf" --scheme w4a16 --calib $CALIB --out "$M/w4a16.gguf" --json "$M/q.w4a16.json"
$F quantize --model "$M/f16.gguf" --scheme w4a16 --method rtn --out "$M/w4a16-rtn.gguf"
$F quantize --model "$M/f16.gguf" --scheme w4a16 --method gptq --calib $CALIB --out "$M/w4a16-gptq.gguf" --json "$M/q.w4a16-gptq.json"
$F quantize --model "$M/f16.gguf" --scheme mixed --budget-mib 101 --calib $CALIB --out "$M/mixed.gguf" --json "$M/q.mixed.json"
for s in q8_0 w8a8 w8a8-rtn q4_0 w4a16 w4a16-gptq w4a16-rtn mixed; do
  $F eval --model "$M/$s.gguf" --ref "$M/f16.gguf" --queries $CALIB --json "$M/e.$s.json" | tee "$M/eval.$s.txt"
done
$F bench --models "$M/q8_0.gguf,$M/w8a8.gguf,$M/q4_0.gguf,$M/w4a16.gguf,$M/mixed.gguf" \
  --prompt-tokens 512 --gen-tokens 128 --batch-rows 0 --reps 5 --out "$M/bench.json" | tee "$M/bench.txt"
