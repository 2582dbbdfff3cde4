#!/usr/bin/env python3
"""Produces tests/data/generation_reference.json with llama.cpp (via llama-cpp-python, pinned in
scripts/versions.sh) on the bundled model. Not run in CI; rerun when the model or peer changes:

    python3 tools/reference/make_generation_reference.py [--model models/SmolLM2-135M-Instruct.Q4_1.gguf]

Two sets of cases, each with llama.cpp's prompt token ids, its greedy 32-token continuation
(argmax every step, EOS not special-cased), the gap between the best and second-best logit at
every greedy step (how close the step was to a tie) and a sample of the first step's logits:
  - "cases": the Q4_1 file as shipped. Both engines quantize activations to 8 bits with slightly
    different rounding, so results agree up to that noise.
  - "f32_cases": the same weights dequantized to f32 (a temporary file written with the `gguf`
    package), where both engines do plain float math and must agree closely.
llama.cpp runs with an f32 K/V cache and no flash attention, like flywheel (its default f16 cache
alone moves these logits by up to ~1.0).
"""
import argparse, json, os, sys, tempfile

import numpy as np
import llama_cpp
from llama_cpp import Llama, __version__ as llama_cpp_version

CHAT = ("<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
        "<|im_start|>user\n{}<|im_end|>\n<|im_start|>assistant\n")
PROMPTS = [
    CHAT.format("What is the capital of France?"),
    "The quick brown fox",
    "def fibonacci(n):\n    ",
    "Once upon a time, in a small village,",
    "The three primary colors are",
    "1, 2, 3, 4, 5,",
    "Water boils at a temperature of",
    CHAT.format("Write a haiku about the ocean."),
    "In 1969, Neil Armstrong",
    "Translate to French: Good morning, how are you?",
]
N_GEN = 32


def last_logits(llm):
    # Llama.scores is not filled by eval() in this version; read the context's logits directly.
    ptr = llama_cpp.llama_get_logits_ith(llm.ctx, -1)
    return np.ctypeslib.as_array(ptr, shape=(llm.n_vocab(),)).astype(np.float32).copy()


def dequantize_to_f32(src, dst):
    from gguf import GGUFReader, GGUFWriter, GGMLQuantizationType
    from gguf.quants import dequantize
    r = GGUFReader(src)
    w = GGUFWriter(dst, arch="llama")
    for k, f in r.fields.items():
        if k.startswith("GGUF.") or k == "general.architecture":
            continue
        if f.types[0].name == "ARRAY":
            w.add_key_value(k, f.contents(), f.types[0], sub_type=f.types[1])
        else:
            w.add_key_value(k, f.contents(), f.types[0])
    for t in r.tensors:
        a = dequantize(t.data, t.tensor_type).astype(np.float32)
        w.add_tensor(t.name, a.reshape(tuple(int(x) for x in reversed(t.shape))), raw_dtype=GGMLQuantizationType.F32)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def run_cases(model_path):
    llm = Llama(model_path=model_path, n_ctx=512, n_batch=512, n_threads=2, logits_all=False, verbose=False,
                flash_attn=False, type_k=0, type_v=0)
    cases = []
    for text in PROMPTS:
        llm.reset()
        ids = llm.tokenize(text.encode("utf-8"), add_bos=False, special=True)
        llm.eval(ids)
        first = last_logits(llm)
        top = np.argsort(-first, kind="stable")[:64]
        sample_ids = sorted(set(int(i) for i in top) | set(range(0, first.shape[0], 97)))
        gen, margins = [], []
        logits = first
        for _ in range(N_GEN):
            two = np.partition(logits, -2)[-2:]
            tok = int(np.argmax(logits))
            gen.append(tok)
            margins.append(round(float(two.max() - two.min()), 5))
            llm.eval([tok])
            logits = last_logits(llm)
        cases.append({
            "prompt": text,
            "prompt_ids": [int(i) for i in ids],
            "greedy_ids": gen,
            "greedy_margins": margins,
            "greedy_text": llm.detokenize(gen).decode("utf-8", errors="replace"),
            "logit_ids": sample_ids,
            "logits": [round(float(first[i]), 5) for i in sample_ids],
        })
        print(repr(text[-40:]), "->", repr(cases[-1]["greedy_text"][:60]), file=sys.stderr)
    return cases


def main():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=os.path.join(root, "models", "SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("--out", default=os.path.join(root, "tests", "data", "generation_reference.json"))
    args = ap.parse_args()
    out = {"peer": "llama.cpp via llama-cpp-python " + llama_cpp_version + " (f32 KV cache, no flash attention)",
           "model": os.path.basename(args.model), "n_gen": N_GEN, "cases": run_cases(args.model)}
    with tempfile.TemporaryDirectory() as tmp:
        f32 = os.path.join(tmp, "model-f32.gguf")
        dequantize_to_f32(args.model, f32)
        out["f32_cases"] = run_cases(f32)
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
