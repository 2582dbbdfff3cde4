#!/usr/bin/env python3
"""Produces tests/data/tokenizer_reference.json with llama.cpp (via llama-cpp-python, pinned in
scripts/versions.sh) on the bundled model's vocabulary: a list of
    {"text": str | "text_latin1": str, "add_special": bool, "parse_special": bool, "ids": [int]}
where "text_latin1" carries raw bytes that are not valid UTF-8 (each code point U+0000..U+00FF is
one byte). Cases: hand-picked strings (English, code, whitespace runs, digits, numbers with commas,
emoji, CJK, accents, invalid bytes, special tokens) plus seeded random mixes of the same pieces.
Read by tests/model/tokenizer_model_test.cpp. Not run in CI; rerun when the model or peer changes:

    python3 tools/reference/make_tokenizer_reference.py [--model models/SmolLM2-135M-Instruct.Q4_1.gguf]
"""
import argparse, json, os, random

from llama_cpp import Llama, __version__ as llama_cpp_version

TEXTS = [
    "Hello world",
    "Hello, world! How are you today?",
    " leading space",
    "trailing space ",
    "  two leading spaces",
    "a  b   c    d",
    "line one\nline two\n\nline four\n",
    "\n\n\n",
    "tabs\tseparated\t\tvalues\t",
    "mixed \t \n whitespace \r\n run",
    "    indented code",
    "def fibonacci(n):\n    if n < 2:\n        return n\n    return fibonacci(n - 1) + fibonacci(n - 2)\n",
    "for (int i = 0; i < 10; ++i) { sum += a[i]; }",
    "#include <stdio.h>\nint main(void) { printf(\"%d\\n\", 42); }",
    "x = {'key': [1, 2, 3], \"other\": None}",
    "The year 2024 had 366 days.",
    "1234567890",
    "3.14159265358979",
    "1,000,000 and 12,345.67",
    "phone: +1 (555) 123-4567",
    "don't can't won't I'm you're we've they'll he'd it's",
    "DON'T I'M YOU'RE WE'VE THEY'LL HE'D IT'S",
    "rock 'n' roll, 'quoted', ''double''",
    "Ça va? Naïve café, résumé, Größe, São Paulo, Zürich",
    "Ελληνικά, Русский язык, العربية, עברית, हिन्दी",
    "中文测试：你好，世界！",
    "日本語のテキストです。カタカナとひらがな。",
    "한국어 문장입니다.",
    "emoji 😀😃😄 👍🏽 🇫🇷 ❤️ 👨‍👩‍👧‍👦",
    "math: ∑ i² = n(n+1)(2n+1)/6, √2 ≈ 1.414, ∞, ½ ¾",
    "arabic digits ٠١٢٣٤٥٦٧٨٩ and superscripts x²y³",
    "\u00a0nbsp\u2028line sep\u3000ideographic space\u200bzero width",
    "combining e\u0301 vs é, a\u0308",
    "!!!??? ... --- *** ### @@@",
    "URL: https://example.com/path?query=1&x=y#frag",
    "email@example.com, user_name-42",
    "<|im_start|>user\nHi<|im_end|>",
    "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
    "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n",
    "text<|endoftext|>more text",
    "<|im_start|><|im_end|><|im_start|>",
    "partial <|im_sta and <|im_end| tokens",
    "<reponame>repo<file_sep>file.py<filename>x",
    "",
    " ",
    "a",
    "Supercalifragilisticexpialidocious antidisestablishmentarianism",
]

# Raw byte strings that are not valid UTF-8 (llama.cpp turns each bad byte into U+FFFD).
BYTES = [
    b"invalid \xff byte",
    b"\x80\x81\x82 stray continuations",
    b"truncated \xe4\xb8 sequence",
    b"truncated at end \xf0\x9f\x98",
    b"\xc3\x28 bad second byte",
    b"overlong \xc0\xaf slash",
    b"latin-1 caf\xe9 na\xefve",
    b"mixed \xe4\xb8\xad\xff\xe6\x96\x87",
    b"\xfe\xff",
    b"surrogate \xed\xa0\x80 half",
]

SPECIAL_OFF = [  # tokenized with parse_special = false
    "<|im_start|>user\nHi<|im_end|>",
    "text<|endoftext|>more text",
]

PIECES = ["Hello", " world", " ", "  ", "\t", "\n", "\r\n", "don't", "I'M", "'s", "123", "4,567",
          "3.5", "é", "ß", "中文", "日本語", "한국", "😀", "👍🏽", "\u00a0", "!", "?", "...", "(", ")",
          "<|im_start|>", "<|im_end|>", "x", "Ж", "٣", "²", "\u0301", "$", "`", "—", "“quoted”"]


def main():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=os.path.join(root, "models", "SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("--out", default=os.path.join(root, "tests", "data", "tokenizer_reference.json"))
    ap.add_argument("--random", type=int, default=150, help="number of seeded random mixes")
    args = ap.parse_args()
    llm = Llama(model_path=args.model, vocab_only=True, verbose=False)

    cases = []

    def add(raw: bytes, add_special=False, parse_special=True):
        ids = llm.tokenize(raw, add_bos=add_special, special=parse_special)
        case = {}
        try:
            case["text"] = raw.decode("utf-8")
        except UnicodeDecodeError:
            case["text_latin1"] = raw.decode("latin-1")
        case.update({"add_special": add_special, "parse_special": parse_special, "ids": list(ids)})
        cases.append(case)

    for t in TEXTS:
        add(t.encode("utf-8"))
    for b in BYTES:
        add(b)
    for t in SPECIAL_OFF:
        add(t.encode("utf-8"), parse_special=False)
    add(b"Hello world", add_special=True)
    rng = random.Random(1234)
    for _ in range(args.random):
        s = "".join(rng.choice(PIECES) for _ in range(rng.randint(1, 16)))
        add(s.encode("utf-8"), parse_special=rng.random() < 0.8)

    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(cases, f, ensure_ascii=True, indent=0)
        f.write("\n")
    print(f"wrote {len(cases)} cases with llama-cpp-python {llama_cpp_version} to {args.out}")


if __name__ == "__main__":
    main()
