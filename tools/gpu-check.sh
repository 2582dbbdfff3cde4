#!/usr/bin/env bash
# tools/gpu-check.sh: the one command for a GPU host (docs/gpu.md). Runs the CUDA-enabled
# binaries packed by scripts/pack-gpu.sh (.gpu/pack.tar.xz, with the libraries they need) and
# writes one JSON report, in about 5 minutes on one H200:
#   1. every GPU test (fw_cuda_tests): each kernel against the CPU reference with named
#      tolerances, the CUDA backend against the CPU backend on the tiny models of every
#      architecture and on the real model (greedy tokens, divergences only at near-ties), CUDA
#      graphs, the two streams, device KV copies, the config door; then the kernel tests again
#      under compute-sanitizer (memcheck, racecheck) where the host has it;
#   2. flywheel bench --workload gpu on a Llama-3-8B-shaped W4A16 model made there: copy
#      bandwidth, each format's product at 8B shapes (GB/s and share of the copy bandwidth), the
#      decode step against weights / bandwidth;
#   3. flywheel bench on that model: pp512, tg128 at batch 1 and 16 (tokens/s);
#   4. flywheel bench-spec on the real model: speculation speedup of ngram and layer-skip drafts.
# Usage: tools/gpu-check.sh [--stage]   (--stage: keep this call's model part for the next call)
# Output: $OUT (the device tool's folder) or ./gpu-report: gpu-report.json, which holds every raw
# result (the device tool returns at most 8 files; the raw files stay in /tmp/fw-gpu/raw).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-$root/gpu-report}
stash=/tmp/fw-gpu
raw=$stash/raw
mkdir -p "$stash" "$out" "$raw"
cp "$root"/.gpu/model/smollm2.part-* "$stash"/ 2>/dev/null
if [ "${1:-}" = "--stage" ]; then
  ls -la "$stash"
  exit 0
fi
[ -f "$root/.gpu/pack.tar.xz" ] || { echo "gpu-check: .gpu/pack.tar.xz missing (scripts/pack-gpu.sh, then carry it)" >&2; exit 1; }
tar -xJf "$root/.gpu/pack.tar.xz" -C "$stash"
bin=$stash/bin
export LD_LIBRARY_PATH=$stash/lib:${LD_LIBRARY_PATH:-}
log() { echo "== $*"; }
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv | tee "$raw/nvidia-smi.csv"
if ls "$stash"/smollm2.part-* > /dev/null 2>&1; then
  cat "$stash"/smollm2.part-* > "$stash/smollm2.gguf"
  if [ "$(sha256sum "$stash/smollm2.gguf" | awk '{print $1}')" = "$(cat "$stash/model.sha256")" ]; then
    export FW_REAL_MODEL=$stash/smollm2.gguf
  else
    echo "gpu-check: the real model's parts are incomplete (run with --stage first): its tests skip"
  fi
fi
cat > "$stash/gpu.toml" <<'TOML'
[kv_cache]
type = "f16"
[scheduler]
prefill_chunk = 2048
[[devices]]
kind = "cuda"
id = 0
role = "both"
kv_pool_mib = 16384
TOML
cd "$stash"
log "1. GPU tests"
timeout 240 "$bin/fw_cuda_tests" --gtest_output="json:$raw/gpu-tests.json" 2>&1 | grep -E "^\[ +(OK|FAILED|SKIPPED|PASSED) +\]|Failure|error|Expected|Which is|differ|  Actual" | head -80
if command -v compute-sanitizer > /dev/null; then
  log "1b. the kernel tests under compute-sanitizer (out-of-bounds accesses, races)"
  timeout 120 compute-sanitizer --tool memcheck --error-exitcode 9 "$bin/fw_cuda_tests" --gtest_filter='cuda_kernels_test.*' \
    > "$raw/sanitizer-memcheck.txt" 2>&1; echo "memcheck exit $?" | tee -a "$raw/sanitizer-memcheck.txt"
  tail -15 "$raw/sanitizer-memcheck.txt"
  timeout 120 compute-sanitizer --tool racecheck --error-exitcode 9 "$bin/fw_cuda_tests" \
    --gtest_filter='cuda_kernels_test.split_k*:cuda_kernels_test.norms*' > "$raw/sanitizer-racecheck.txt" 2>&1
  echo "racecheck exit $?" | tee -a "$raw/sanitizer-racecheck.txt"
  tail -8 "$raw/sanitizer-racecheck.txt"
fi
log "2. Llama-3-8B-shaped W4A16 model and the product benchmark"
"$bin/flywheel-tiny-model" --shape llama3-8b --type w4a16 --out "$stash/llama3-8b-w4a16.gguf"
timeout 150 "$bin/flywheel" bench --config "$stash/gpu.toml" --model "$stash/llama3-8b-w4a16.gguf" --workload gpu \
  --out "$raw/gpu-bench.json" 2>&1 | tail -40
log "3. pp512 / tg128 / tg128x16 on the 8B shape"
timeout 120 "$bin/flywheel" bench --config "$stash/gpu.toml" --model "$stash/llama3-8b-w4a16.gguf" --prompt-tokens 512 \
  --gen-tokens 128 --batch-rows 16 --reps 3 --json > "$raw/bench-8b.json" 2> "$raw/bench-8b.err"
tail -c 2000 "$raw/bench-8b.json"; tail -5 "$raw/bench-8b.err"
if [ -n "${FW_REAL_MODEL:-}" ]; then
  log "4. speculation on the real model"
  timeout 90 "$bin/flywheel" bench-spec --config "$stash/gpu.toml" --model "$FW_REAL_MODEL" --drafts ngram,layer-skip \
    --k 2,4,auto --reps 1 --json-out "$raw/spec.json" 2>&1 | tail -25
fi
python3 - "$raw" "$out" <<'PY'
import json, os, sys
raw, out = sys.argv[1], sys.argv[2]
report = {}
for name in ("gpu-tests", "gpu-bench", "bench-8b", "spec"):
    p = os.path.join(raw, name + ".json")
    try:
        with open(p) as f:
            report[name] = json.load(f)
    except Exception as e:
        report[name] = {"missing": str(e)}
t = report.get("gpu-tests", {})
if "tests" in t:
    print("tests: %d run, %d failed" % (t["tests"], t.get("failures", 0)))
b = report.get("gpu-bench", {})
for g in b.get("gemv", []):
    if g["matrix"] in ("gate_up", "down"):
        print("%-6s %-8s %6.0f GB/s  %3.0f%% of copy" % (g["format"], g["matrix"], g["gbs_b1"], 100 * g["share_of_copy"]))
if "decode" in b:
    print("decode step (batch 1): %.3f ms, %.2fx weights / bandwidth" % (b["decode"]["step_ms_b1"], b["decode"]["step_vs_floor"]))
for tool in ("memcheck", "racecheck"):
    p = os.path.join(raw, f"sanitizer-{tool}.txt")
    if os.path.exists(p):
        text = open(p, errors="replace").read()
        report["sanitizer-" + tool] = {"clean": f"{tool} exit 0" in text, "tail": text[-2000:]}
        print(f"compute-sanitizer {tool}: {'clean' if report['sanitizer-' + tool]['clean'] else 'FOUND ERRORS (see the file)'}")
for extra in ("nvidia-smi.csv", "bench-8b.err"):
    p = os.path.join(raw, extra)
    if os.path.exists(p):
        report[extra] = open(p, errors="replace").read()[-4000:]
with open(os.path.join(out, "gpu-report.json"), "w") as f:
    json.dump(report, f, indent=1)
print("report:", os.path.join(out, "gpu-report.json"))
PY
