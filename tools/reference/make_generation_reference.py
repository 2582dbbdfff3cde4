#!/usr/bin/env python3
"""Produces tests/data/generation_reference.json with llama.cpp (via llama-cpp-python, pinned in
scripts/versions.sh) on the bundled model: for each prompt, llama.cpp's prompt token ids, its greedy
32-token continuation (argmax every step, EOS not special-cased) and a sample of the first step's
logits (the top 64 plus every 97th id). Not run in CI; rerun when the model or peer changes:

    python3 tools/reference/make_generation_reference.py [--model models/SmolLM2-135M-Instruct.Q4_1.gguf]
"""
import argparse, json, os, sys

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


def main():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=os.path.join(root, "models", "SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("--out", default=os.path.join(root, "tests", "data", "generation_reference.json"))
    args = ap.parse_args()
    # f32 K/V like flywheel: llama.cpp's default f16 cache alone moves these logits by up to ~1.0.
    llm = Llama(model_path=args.model, n_ctx=512, n_batch=512, n_threads=2, logits_all=False, verbose=False,
                flash_attn=False, type_k=0, type_v=0)
    cases = []
    for text in PROMPTS:
        llm.reset()
        ids = llm.tokenize(text.encode("utf-8"), add_bos=False, special=True)
        llm.eval(ids)
        first = last_logits(llm)
        top = np.argsort(-first, kind="stable")[:64]
        sample_ids = sorted(set(int(i) for i in top) | set(range(0, first.shape[0], 97)))
        gen = []
        logits = first
        for _ in range(N_GEN):
            tok = int(np.argmax(logits))
            gen.append(tok)
            llm.eval([tok])
            logits = last_logits(llm)
        cases.append({
            "prompt": text,
            "prompt_ids": [int(i) for i in ids],
            "greedy_ids": gen,
            "greedy_text": llm.detokenize(gen).decode("utf-8", errors="replace"),
            "logit_ids": sample_ids,
            "logits": [round(float(first[i]), 5) for i in sample_ids],
        })
        print(repr(text[-40:]), "->", repr(cases[-1]["greedy_text"][:60]), file=sys.stderr)
    out = {"peer": "llama.cpp via llama-cpp-python " + llama_cpp_version + " (f32 KV cache, no flash attention)",
           "model": os.path.basename(args.model), "n_gen": N_GEN, "cases": cases}
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
