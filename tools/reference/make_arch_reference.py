#!/usr/bin/env python3
"""Produces tests/data/arch_reference.json with llama.cpp (via llama-cpp-python, pinned in
scripts/versions.sh) on flywheel's own tiny random-weight models, one per architecture and
vocabulary kind (llama + bpe, llama + spm as Mistral/Llama 2 files are, llama with Llama 3.1's
rope_freqs table, qwen2 with q/k/v biases,
qwen3 with per-head q/k norms and a head size that makes q wider than the residual stream, phi3
with fused attn_qkv and gate|up tensors). f32 weights, f32 KV cache, no flash attention: both
engines do plain float math, so first-step logits must agree closely and greedy continuations
exactly. Each case records the tiny model's spec; tests/model/arch_reference_test.cpp rebuilds the
same bytes with the tiny-model library (deterministic) and compares. Not run in CI; rerun when the
tiny-model generator or the peer changes:

    python3 tools/reference/make_arch_reference.py --tiny-model build/tools/flywheel-tiny-model

The binding: PYTHONPATH=<sdist dir> LLAMA_CPP_LIB_PATH=<llama.cpp build>/bin (../shared/STACK.md).
"""
import argparse, json, os, subprocess, sys, tempfile

import numpy as np
import llama_cpp
from llama_cpp import Llama, __version__ as llama_cpp_version

# name -> tiny model spec (keys as tiny_model_spec / flywheel-tiny-model options).
CASES = {
    "llama_bpe": {"arch": "llama", "vocab": "bpe", "embd": 64, "layers": 2, "heads": 4, "kv_heads": 2, "ff": 128},
    "llama_spm": {"arch": "llama", "vocab": "spm", "embd": 64, "layers": 2, "heads": 4, "kv_heads": 1, "ff": 96},
    "llama_rope_freqs": {"arch": "llama", "vocab": "bpe", "embd": 64, "layers": 2, "heads": 2, "kv_heads": 2,
                         "ff": 128, "rope_freqs": True},
    "qwen2": {"arch": "qwen2", "vocab": "bpe", "embd": 64, "layers": 2, "heads": 4, "kv_heads": 2, "ff": 128,
              "untied": True},
    "qwen3": {"arch": "qwen3", "vocab": "bpe", "embd": 64, "layers": 2, "heads": 4, "kv_heads": 2, "ff": 128,
              "head_dim": 32},
    "phi3": {"arch": "phi3", "vocab": "spm", "embd": 96, "layers": 2, "heads": 4, "kv_heads": 4, "ff": 160,
             "untied": True},
}
# Prompts as token ids (the tokenizers have their own reference data): ids every vocabulary has.
PROMPTS = [[5, 17, 200, 33, 91], [1, 120, 121, 122, 7, 250, 44, 44, 9], [60], list(range(30, 70, 3))]
N_GEN = 24


def tiny_args(spec):
    a = ["--arch", spec["arch"], "--vocab", spec["vocab"], "--embd", str(spec["embd"]), "--layers",
         str(spec["layers"]), "--heads", str(spec["heads"]), "--kv-heads", str(spec["kv_heads"]), "--ff",
         str(spec["ff"]), "--seed", str(spec.get("seed", 1))]
    if spec.get("head_dim"):
        a += ["--head-dim", str(spec["head_dim"])]
    if spec.get("untied"):
        a += ["--untied"]
    if spec.get("rope_freqs"):
        a += ["--rope-freqs"]
    return a


def last_logits(llm):
    ptr = llama_cpp.llama_get_logits_ith(llm.ctx, -1)
    return np.ctypeslib.as_array(ptr, shape=(llm.n_vocab(),)).astype(np.float32).copy()


def run(path):
    llm = Llama(model_path=path, n_ctx=256, n_batch=256, n_threads=2, logits_all=False, verbose=False,
                flash_attn=False, type_k=0, type_v=0)
    out = []
    for ids in PROMPTS:
        llm.reset()
        llm.eval(ids)
        first = last_logits(llm)
        logits = first
        gen, margins = [], []
        for _ in range(N_GEN):
            two = np.partition(logits, -2)[-2:]
            tok = int(np.argmax(logits))
            gen.append(tok)
            margins.append(round(float(two.max() - two.min()), 6))
            llm.eval([tok])
            logits = last_logits(llm)
        out.append({"prompt_ids": ids, "greedy_ids": gen, "greedy_margins": margins,
                    "logits": [round(float(x), 6) for x in first]})
    return out


def main():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap = argparse.ArgumentParser()
    ap.add_argument("--tiny-model", default=os.path.join(root, "build", "tools", "flywheel-tiny-model"))
    ap.add_argument("--out", default=os.path.join(root, "tests", "data", "arch_reference.json"))
    args = ap.parse_args()
    res = {"peer": "llama.cpp via llama-cpp-python " + llama_cpp_version + " (f32 weights and KV cache, no flash "
           "attention)", "n_gen": N_GEN, "cases": []}
    with tempfile.TemporaryDirectory() as tmp:
        for name, spec in CASES.items():
            path = os.path.join(tmp, name + ".gguf")
            subprocess.run([args.tiny_model, "--out", path] + tiny_args(spec), check=True)
            runs = run(path)
            res["cases"].append({"name": name, "spec": spec, "runs": runs})
            print(name, [r["greedy_ids"][:8] for r in runs], file=sys.stderr)
    with open(args.out, "w") as f:
        json.dump(res, f, indent=None, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()
