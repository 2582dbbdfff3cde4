#!/usr/bin/env python3
"""Produces tests/data/vocab_reference.json with llama.cpp (the llama-cpp-python binding pinned in
scripts/versions.sh, vocab_only) on the vocab-only GGUFs of real model families that ship in its
sdist (models/vocab/, put there by scripts/setup.sh):

    {"llama_cpp_python": VERSION, "vocabs": {NAME: {
        "encode":     [{"text" | "text_latin1": str, "add_special": bool, "parse_special": bool,
                        "ids": [int]}],
        "detokenize": [{"ids": [int], "remove_special": bool, "unparse_special": bool,
                        "bytes_latin1": str}],       # llama_detokenize
        "pieces":     [{"id": int, "special": bool, "bytes_latin1": str}]}}}   # llama_token_to_piece

and tests/data/vocab_reference_chat.json: real chat template sources (from the vocab files, llama.cpp's
models/templates/ and tests, and Llama-2-chat's as published), each conversation rendered with
jinja2 the way transformers renders (trim_blocks, lstrip_blocks, raise_exception) and, for the
templates paired with a vocabulary, the ids llama.cpp gives the rendered prompt (leading BOS text
removed, add_special and parse_special on, as llama.cpp's chat path does):

    {"templates": [{"name", "family", "source", "bos", "eos", "vocab" | null,
                    "renders": [{"messages", "add_generation_prompt", "text", "ids"?}]}]}

"text_latin1"/"bytes_latin1" carry raw bytes that need not be UTF-8 (each code point
U+0000..U+00FF is one byte). Cases per vocabulary: hand-picked strings (English, code, whitespace
runs, digits, emoji, CJK, accents, invalid UTF-8), the vocabulary's own special-token texts with
and without parse_special, some with BOS/EOS, and seeded random mixes. Read by
tests/model/vocab_reference_test.cpp. Not run in CI; rerun when the peer or the vocab files change:

    PYTHONPATH=<sdist>/llama_cpp_python-0.3.36 LLAMA_CPP_LIB_PATH=<dir of libllama.so> \\
        python3 tools/reference/make_vocab_reference.py [--vocab-dir models/vocab] [--out ...]
(the binding's venv needs jinja2).
"""
import argparse, ctypes, json, os, random

import llama_cpp
from llama_cpp import Llama

LLAMA_CPP = os.path.join(os.path.dirname(llama_cpp.__file__), "..", "vendor", "llama.cpp")

# meta-llama/Llama-2-7b-chat-hf tokenizer_config.json "chat_template", transcribed (llama.cpp's
# tree carries only modified copies of it).
LLAMA2_TEMPLATE = (
    "{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}{% set system_message = "
    "messages[0]['content'] %}{% else %}{% set loop_messages = messages %}{% set system_message = false %}"
    "{% endif %}{% for message in loop_messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
    "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}"
    "{% if loop.index0 == 0 and system_message != false %}{% set content = '<<SYS>>\\n' + system_message + "
    "'\\n<</SYS>>\\n\\n' + message['content'] %}{% else %}{% set content = message['content'] %}{% endif %}"
    "{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}"
    "{% elif message['role'] == 'assistant' %}{{ ' '  + content.strip() + ' ' + eos_token }}{% endif %}{% endfor %}")

# mistralai/Mistral-7B-Instruct-v0.2 (old, pre-v1), as in llama.cpp's tests/test-chat-template.cpp.
MISTRAL_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
    "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}"
    "{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'] + ' [/INST]' }}{% elif message['role'] "
    "== 'assistant' %}{{ message['content'] + eos_token}}{% else %}{{ raise_exception('Only user and assistant "
    "roles are supported!') }}{% endif %}{% endfor %}")

CONVERSATIONS = [
    [{"role": "user", "content": "Hi"}],
    [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is 2+2?"}],
    [{"role": "user", "content": "  padded question \n"}, {"role": "assistant", "content": " answer "},
     {"role": "user", "content": "naïve 中文 😀"}],
    [{"role": "system", "content": " sys "}, {"role": "user", "content": "a"}, {"role": "assistant", "content": "b"},
     {"role": "user", "content": "c"}],
    [{"role": "system", "content": ""}, {"role": "user", "content": "x"}],
    [{"role": "user", "content": ""}],
]

VOCABS = ["qwen2", "deepseek-llm", "deepseek-coder", "falcon", "llama-spm", "phi-3"]

TEXTS = [
    "Hello world", " Hello world", "Hello World", "hello", " hello", "HELLO",
    "Hello, world! How are you today?", " leading space", "trailing space ", "  two leading spaces",
    "a  b   c    d", "   ", "\t", "\n", "\n\n\n", "\r\n", " \n", "line one\nline two\n\nline four\n",
    "tabs\tseparated\t\tvalues\t", "mixed \t \n whitespace \r\n run", "    indented code",
    "def fibonacci(n):\n    if n < 2:\n        return n\n    return fibonacci(n - 1) + fibonacci(n - 2)\n",
    "for (int i = 0; i < 10; ++i) { sum += a[i]; }",
    "#include <stdio.h>\nint main(void) { printf(\"%d\\n\", 42); }",
    "x = {'key': [1, 2, 3], \"other\": None}", "if (a && b || !c) { return a->b.c[0]; }",
    "SELECT * FROM users WHERE id = 42;", "    \t\t  mixed indentation\n\t\tmore",
    "The year 2024 had 366 days.", "1234567890", "3.14159265358979", "1,000,000 and 12,345.67",
    "phone: +1 (555) 123-4567", "0x1F 0b1010 1e-9 -42", "111222333444555666777888999000",
    "don't can't won't I'm you're we've they'll he'd it's", "DON'T I'M YOU'RE WE'VE THEY'LL HE'D IT'S",
    "rock 'n' roll, 'quoted', ''double''", "He said ' hello ' and left .", "Hello , world !",
    "Ça va? Naïve café, résumé, Größe, São Paulo, Zürich", "Ελληνικά, Русский язык, العربية, עברית, हिन्दी",
    "中文测试：你好，世界！", "日本語のテキストです。カタカナとひらがな。", "한국어 문장입니다.",
    "emoji 😀😃😄 👍🏽 🇫🇷 ❤️ 👨‍👩‍👧‍👦", "math: ∑ i² = n(n+1)(2n+1)/6, √2 ≈ 1.414, ∞, ½ ¾",
    "arabic digits ٠١٢٣٤٥٦٧٨٩ and superscripts x²y³", "\u00a0nbsp\u2028line sep\u3000ideographic space\u200bzero width",
    "combining e\u0301 vs é, a\u0308", "!!!??? ... --- *** ### @@@", "`backticks` and ~tildes~ ^caret^ |pipe| $dollar",
    "URL: https://example.com/path?query=1&x=y#frag", "email@example.com, user_name-42",
    "Supercalifragilisticexpialidocious antidisestablishmentarianism", "a", "", " ", "▁", "▁▁x ▁",
    "ÀÖØöøƺ µ ﬀ Ａｚ 𐐀", "！＂＃ “curly” ‘single’ 　。", "一龥ࠀ가힣", "ﬁ ligature ℌ ℍ ℎ K Ω",
    "<0x41> <0xFF> literal byte-token text", "ied 4 ½ months", "Äpfel",
]

# Raw byte strings that are not valid UTF-8.
BYTES = [
    b"invalid \xff byte", b"\x80\x81\x82 stray continuations", b"truncated \xe4\xb8 sequence",
    b"truncated at end \xf0\x9f\x98", b"\xc3\x28 bad second byte", b"overlong \xc0\xaf slash",
    b"latin-1 caf\xe9 na\xefve", b"mixed \xe4\xb8\xad\xff\xe6\x96\x87", b"\xfe\xff", b"surrogate \xed\xa0\x80 half",
    b"\xe4ab lead byte eats ascii",
]

PIECES = ["Hello", " world", " ", "  ", "\t", "\n", "\r\n", "don't", "I'M", "'s", "123", "4,567",
          "3.5", "é", "ß", "中文", "日本語", "한국", "😀", "👍🏽", "\u00a0", "!", "?", "...", "(", ")",
          "x", "Ж", "٣", "²", "\u0301", "$", "`", "—", "“quoted”", "def ", "    ", "_", "'", "\"", "<", ">"]

ATTR_CONTROL, ATTR_USER_DEFINED = 1 << 3, 1 << 4


def to_json_text(raw: bytes) -> dict:
    try:
        return {"text": raw.decode("utf-8")}
    except UnicodeDecodeError:
        return {"text_latin1": raw.decode("latin-1")}


def main():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap = argparse.ArgumentParser()
    ap.add_argument("--vocab-dir", default=os.path.join(root, "models", "vocab"))
    ap.add_argument("--out", default=os.path.join(root, "tests", "data", "vocab_reference.json"))
    ap.add_argument("--random", type=int, default=60, help="seeded random mixes per vocabulary")
    args = ap.parse_args()

    out = {"llama_cpp_python": llama_cpp.__version__, "vocabs": {}}
    for name in VOCABS:
        path = os.path.join(args.vocab_dir, f"ggml-vocab-{name}.gguf")
        llm = Llama(model_path=path, vocab_only=True, verbose=False)
        vocab = llama_cpp.llama_model_get_vocab(llm.model)
        n_vocab = llama_cpp.llama_vocab_n_tokens(vocab)

        def text_of(tid):
            return llama_cpp.llama_vocab_get_text(vocab, tid).decode("utf-8", "replace")

        specials = [t for t in range(n_vocab) if llama_cpp.llama_vocab_get_attr(vocab, t) & (ATTR_CONTROL | ATTR_USER_DEFINED)]
        special_texts = [text_of(t) for t in specials[:6] + specials[-3:]]
        for t in (llama_cpp.llama_vocab_bos(vocab), llama_cpp.llama_vocab_eos(vocab)):
            if t >= 0 and text_of(t) not in special_texts:
                special_texts.append(text_of(t))
        for known in ("<|im_start|>", "<|im_end|>", "<|endoftext|>", "<|user|>", "<|assistant|>", "<|end|>", "<|system|>"):
            if known not in special_texts and llm.tokenize(known.encode(), add_bos=False, special=True) != llm.tokenize(known.encode(), add_bos=False, special=False):
                special_texts.append(known)

        encode = []

        def add(raw: bytes, add_special=False, parse_special=False):
            ids = llm.tokenize(raw, add_bos=add_special, special=parse_special)
            encode.append({**to_json_text(raw), "add_special": add_special, "parse_special": parse_special, "ids": list(ids)})
            return ids

        for t in TEXTS:
            add(t.encode("utf-8"))
        for b in BYTES:
            add(b)
        for s in special_texts:
            for ps in (True, False):
                add(s.encode(), parse_special=ps)
                add(f"Hi {s} there{s}\n{s} x".encode(), parse_special=ps)
        for t in ["Hello world", "", " ", "\n", "中文", special_texts[0] + "Hi"]:
            for ps in (True, False):
                add(t.encode(), add_special=True, parse_special=ps)
        rng = random.Random(4321 + len(name))
        for _ in range(args.random):
            parts = PIECES + special_texts
            s = "".join(rng.choice(parts) for _ in range(rng.randint(1, 16)))
            add(s.encode("utf-8"), add_special=rng.random() < 0.3, parse_special=rng.random() < 0.5)

        detok = []
        buf = ctypes.create_string_buffer(1 << 16)
        for c in encode[:: max(1, len(encode) // 12)][:12] + [e for e in encode if e["add_special"]][:4]:
            ids = c["ids"]
            arr = (llama_cpp.llama_token * max(1, len(ids)))(*ids)
            for rs, us in ((False, False), (True, True), (False, True), (True, False)):
                n = llama_cpp.llama_detokenize(vocab, arr, len(ids), buf, len(buf), rs, us)
                assert n >= 0
                detok.append({"ids": ids, "remove_special": rs, "unparse_special": us,
                              "bytes_latin1": buf.raw[:n].decode("latin-1")})

        pieces = []
        ids = sorted(set(list(range(0, 12)) + specials[:4] + [n_vocab - 1] + rng.sample(range(n_vocab), 24)))
        for t in ids:
            for sp in (True, False):
                n = llama_cpp.llama_token_to_piece(vocab, t, buf, len(buf), 0, sp)
                assert n >= 0
                pieces.append({"id": t, "special": sp, "bytes_latin1": buf.raw[:n].decode("latin-1")})

        out["vocabs"][name] = {"file": os.path.basename(path), "encode": encode, "detokenize": detok, "pieces": pieces}
        print(f"{name}: {len(encode)} encode, {len(detok)} detokenize, {len(pieces)} piece cases")
        del llm

    chat = {"templates": chat_reference(args.vocab_dir)}
    chat_out = os.path.join(os.path.dirname(args.out), "vocab_reference_chat.json")
    with open(chat_out, "w", encoding="utf-8") as f:
        json.dump(chat, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(f"wrote {chat_out}")

    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=0)
        f.write("\n")
    print(f"wrote {args.out}")


def chat_reference(vocab_dir):
    import jinja2, jinja2.sandbox

    def raise_exception(msg):
        raise jinja2.exceptions.TemplateError(msg)

    env = jinja2.sandbox.ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                                       extensions=["jinja2.ext.loopcontrols"])
    env.globals["raise_exception"] = raise_exception
    llms = {}

    def vocab(name):
        if name not in llms:
            llms[name] = Llama(model_path=os.path.join(vocab_dir, f"ggml-vocab-{name}.gguf"), vocab_only=True, verbose=False)
        return llms[name]

    def read(path):
        with open(path, encoding="utf-8") as f:
            return f.read()

    templates = [
        ("qwen2 (vocab file)", "chatml", vocab("qwen2").metadata["tokenizer.chat_template"], "qwen2"),
        ("Qwen2.5-7B-Instruct", "chatml", read(os.path.join(LLAMA_CPP, "models/templates/Qwen-Qwen2.5-7B-Instruct.jinja")), "qwen2"),
        ("phi-3 (vocab file)", "phi3", vocab("phi-3").metadata["tokenizer.chat_template"], "phi-3"),
        ("Phi-3.5-mini-instruct", "phi3", read(os.path.join(LLAMA_CPP, "models/templates/microsoft-Phi-3.5-mini-instruct.jinja")), "phi-3"),
        ("Llama-2-7b-chat", "llama2", LLAMA2_TEMPLATE, "llama-spm"),
        ("Mistral-7B-Instruct-v0.2", "mistral", MISTRAL_TEMPLATE, "llama-spm"),
    ]
    out = []
    for name, family, source, vocab_name in templates:
        llm = vocab(vocab_name)
        bos = llm.detokenize([llm.token_bos()], special=True).decode("utf-8")
        eos = llm.detokenize([llm.token_eos()], special=True).decode("utf-8")
        tmpl = env.from_string(source)
        renders = []
        for msgs in CONVERSATIONS:
            for gen in (True, False):
                try:
                    text = tmpl.render(messages=msgs, add_generation_prompt=gen, bos_token=bos, eos_token=eos)
                except jinja2.exceptions.TemplateError:
                    continue  # the template refuses this conversation (roles)
                prompt = text[len(bos):] if text.startswith(bos) else text
                ids = llm.tokenize(prompt.encode("utf-8"), add_bos=True, special=True)
                renders.append({"messages": msgs, "add_generation_prompt": gen, "text": text, "ids": list(ids)})
        out.append({"name": name, "family": family, "source": source, "bos": bos, "eos": eos,
                    "vocab": vocab_name, "renders": renders})
        print(f"chat template {name}: {len(renders)} renders")
    return out


if __name__ == "__main__":
    main()
