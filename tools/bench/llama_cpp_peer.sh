# Sourced by the benchmark scripts that run llama.cpp next to flywheel (never CI): where the peer
# is built and a function that builds its programs once. The peer is llama.cpp as vendored by the
# PyPI sdist of llama-cpp-python (version pinned in scripts/versions.sh), built with
# -DGGML_NATIVE=ON (the peer at its best on this CPU); FW_LLAMA_CPP_NATIVE=0 builds the portable
# AVX2/AVX-512/VNNI/BF16 set instead (AMX off), and FW_LLAMA_CPP_NATIVE=avx2 builds AVX2 + FMA + F16C
# only: the peer an AVX2-only host gets, measurable on an AVX-512 host next to FW_SIMD=avx2 (a
# stand-in until an AVX2 host measures it). Cache: ${FW_LLAMA_CPP_CACHE:-
# ~/.cache/flywheel/llama.cpp-<version>[-native|-avx2]}; programs in $LLAMA_BIN.
# Needs ROOT (the repository) and scripts/versions.sh sourced.

LLAMA_VERSION="${FW_LLAMA_CPP_PYTHON#*==}"
LLAMA_NATIVE="${FW_LLAMA_CPP_NATIVE:-1}"
case "$LLAMA_NATIVE" in
  1) LLAMA_SUFFIX=-native ;;
  avx2) LLAMA_SUFFIX=-avx2 ;;
  *) LLAMA_SUFFIX= ;;
esac
LLAMA_CACHE="${FW_LLAMA_CPP_CACHE:-$HOME/.cache/flywheel/llama.cpp-$LLAMA_VERSION$LLAMA_SUFFIX}"
LLAMA_BIN="$LLAMA_CACHE/bin"

# build_llama_cpp TARGET...: builds the targets missing from $LLAMA_BIN (~12 min for the first
# on 2 cores, less for the next ones) and copies them there.
build_llama_cpp() {
  local missing=()
  for t in "$@"; do [[ -x "$LLAMA_BIN/$t" ]] || missing+=("$t"); done
  if [[ ${#missing[@]} -eq 0 ]]; then
    echo "llama.cpp $LLAMA_VERSION: using $LLAMA_BIN" >&2
    return
  fi
  mkdir -p "$LLAMA_CACHE/src"
  if [[ ! -d "$LLAMA_CACHE/src/llama_cpp_python-$LLAMA_VERSION" ]]; then
    [[ -f "$LLAMA_CACHE/src/llama_cpp_python-$LLAMA_VERSION.tar.gz" ]] ||
      python3 -m pip download "$FW_LLAMA_CPP_PYTHON" --no-binary :all: --no-deps -d "$LLAMA_CACHE/src"
    tar -xzf "$LLAMA_CACHE/src/llama_cpp_python-$LLAMA_VERSION.tar.gz" -C "$LLAMA_CACHE/src"
  fi
  local src="$LLAMA_CACHE/src/llama_cpp_python-$LLAMA_VERSION/vendor/llama.cpp"
  echo "building ${missing[*]} from $src" >&2
  local isa=(-DGGML_NATIVE=ON)
  if [[ $LLAMA_NATIVE == avx2 ]]; then
    isa=(-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=OFF
      -DGGML_AVX512_VNNI=OFF -DGGML_AVX512_BF16=OFF -DGGML_AVX_VNNI=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF
      -DGGML_AMX_BF16=OFF)
  elif [[ $LLAMA_NATIVE != 1 ]]; then isa=(-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_AVX512=ON
    -DGGML_AVX512_VNNI=ON -DGGML_AVX512_BF16=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AMX_TILE=OFF
    -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF)
  fi
  cmake -S "$src" -B "$LLAMA_CACHE/build" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF "${isa[@]}" \
    -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=ON >&2
  cmake --build "$LLAMA_CACHE/build" --target "${missing[@]}" -j "${FW_JOBS:-2}" >&2
  mkdir -p "$LLAMA_BIN"
  for t in "${missing[@]}"; do cp "$LLAMA_CACHE/build/bin/$t" "$LLAMA_BIN/"; done
}
