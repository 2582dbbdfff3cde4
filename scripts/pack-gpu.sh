#!/usr/bin/env bash
# scripts/pack-gpu.sh: packs, on this (build) machine, what tools/gpu-check.sh needs on a GPU host
# that lacks this project's libraries (docs/gpu.md):
#   .gpu/pack.tar.xz         the CUDA-enabled binaries built here (flywheel, fw_cuda_tests,
#                            flywheel-tiny-model; stripped) and every shared library ldd shows
#                            them using outside the C library (CAF, utf8proc, pcre2, libedit,
#                            libstdc++, the CUDA runtime, ...), with the real model's checksum
#   .gpu/model/smollm2.part-aa, -ab   the real model in two parts: a device call carries at most
#                            64 MiB, so the first call stages part aa (tools/gpu-check.sh
#                            --stage) and the second carries part ab and runs the check.
# Needs a build with the CUDA backend (nvcc found): scripts/setup.sh, or cmake --build build.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${FW_BUILD_DIR:-build}
model=models/SmolLM2-135M-Instruct.Q4_1.gguf
cmake --build "$build" -j"$(nproc)" --target flywheel fw_cuda_tests flywheel-tiny-model
[ -x "$build/tests/fw_cuda_tests" ] || { echo "pack-gpu: $build has no fw_cuda_tests (a build without nvcc?)" >&2; exit 1; }
[ -f "$model" ] || { echo "pack-gpu: $model is missing (run scripts/setup.sh)" >&2; exit 1; }
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib"
for b in tools/flywheel tests/fw_cuda_tests tools/flywheel-tiny-model; do
  cp "$build/$b" "$stage/bin/"
  strip "$stage/bin/$(basename "$b")"
done
for b in "$stage"/bin/*; do ldd "$b"; done | awk '/=> \// {print $3}' | sort -u | while read -r lib; do
  case "$(basename "$lib")" in
    libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|ld-linux*|libcuda.so*) ;;  # the host's own
    *) cp -L "$lib" "$stage/lib/" ;;
  esac
done
sha256sum "$model" | awk '{print $1}' > "$stage/model.sha256"
rm -rf .gpu
mkdir -p .gpu/model
tar -cJf .gpu/pack.tar.xz -C "$stage" bin lib model.sha256
split -n 2 -d --additional-suffix= "$model" .gpu/model/smollm2.part-
mv .gpu/model/smollm2.part-00 .gpu/model/smollm2.part-aa
mv .gpu/model/smollm2.part-01 .gpu/model/smollm2.part-ab
du -b .gpu/pack.tar.xz .gpu/model/* | awk '{printf "%s %.1f MiB\n", $2, $1 / 1048576}'
echo "pack-gpu: ready. On the GPU host (device tool, two calls back to back):"
echo "  1. carry .gpu/pack.tar.xz .gpu/model/smollm2.part-aa:  tools/gpu-check.sh --stage"
echo "  2. carry .gpu/pack.tar.xz .gpu/model/smollm2.part-ab:  tools/gpu-check.sh"
