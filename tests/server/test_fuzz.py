"""Random hostile input against the real `flywheel serve`: mutated JSON bodies (bytes flipped,
cut, duplicated; values swapped for other types, huge numbers, deep arrays, control text) and
mutated raw HTTP (request lines, headers, Content-Length). Every answer must be a well-formed HTTP
response with a status below 500 and an OpenAI error object for 4xx, or the connection closed
for garbage that is not HTTP; the server keeps answering /health and ends with nothing running
and the KV pool empty. Seeded: a failure names its seed and case."""
import json
import os
import random
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from fw_server import MODEL_ID, Server, get, metric, raw, wait_until  # noqa: E402

SEED = int(os.environ.get("FW_FUZZ_SEED", "20261201"))
CASES = int(os.environ.get("FW_FUZZ_CASES", "400"))

BASE = [
    ("/v1/chat/completions", {"model": MODEL_ID, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}),
    ("/v1/completions", {"model": MODEL_ID, "prompt": "hi", "max_tokens": 2, "temperature": 0.5, "stop": ["x"]}),
    ("/v1/completions", {"prompt": [1, 2, 3], "max_tokens": 2, "stream": True,
                         "stream_options": {"include_usage": True}}),
    ("/v1/chat/completions", {"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}],
                              "max_tokens": 2, "logprobs": True, "top_logprobs": 2, "seed": 7}),
]

ODD_VALUES = [None, True, False, 0, -1, 1, 2**63, 2**64, -2**63 - 1, 1e308, -1e308, 0.5, "", "x" * 3000,
              "<|im_end|><|im_start|>system", "\u0000", "\ud7ff", "é😀中", [], {}, [[[]]], {"a": {"b": {}}},
              [1] * 50, "NaN"]


def mutate_value(rnd, v, depth=0):
    r = rnd.random()
    if r < 0.3:
        return rnd.choice(ODD_VALUES)
    if isinstance(v, dict) and v:
        v = dict(v)
        k = rnd.choice(list(v))
        if rnd.random() < 0.2:
            del v[k]
        else:
            v[k] = mutate_value(rnd, v[k], depth + 1)
        if rnd.random() < 0.1:
            v[rnd.choice(["n", "best_of", "logprobs", "top_k", "min_p", "max_draft_tokens", "echo", "tools",
                          "response_format", "stream_options", "top_p"])] = rnd.choice(ODD_VALUES)
        return v
    if isinstance(v, list) and v:
        v = list(v)
        i = rnd.randrange(len(v))
        v[i] = mutate_value(rnd, v[i], depth + 1)
        return v
    return rnd.choice(ODD_VALUES)


def mutate_bytes(rnd, b):
    b = bytearray(b)
    for _ in range(rnd.randint(1, 4)):
        op = rnd.random()
        if not b:
            break
        i = rnd.randrange(len(b))
        if op < 0.3:
            b[i] = rnd.randrange(256)
        elif op < 0.5:
            del b[i:]
        elif op < 0.7:
            b[i:i] = b[i:i + rnd.randint(1, 20)]
        elif op < 0.85:
            b[i:i] = rnd.choice([b"[", b"{", b"\"", b"\\", b"\xff", b"\xc3", b",", b"NaN", b"1e999"]) * rnd.randint(1, 50)
        else:
            del b[i]
    return bytes(b)


def http(path, body, rnd):
    headers = [f"POST {path} HTTP/1.1", "Host: x", "Content-Type: application/json", "Connection: close"]
    length = len(body)
    r = rnd.random()
    if r < 0.05:
        headers.append(f"Content-Length: {rnd.choice(['-1', 'abc', '99999999999999999999', str(length) + ', 5'])}")
    elif r < 0.08:
        headers.append("Transfer-Encoding: chunked")
        body = f"{len(body):x}\r\n".encode() + body + b"\r\n0\r\n\r\n"
    else:
        headers.append(f"Content-Length: {length}")
    if rnd.random() < 0.05:
        headers.append("X-" + "a" * rnd.randint(1, 30000) + ": 1")
    if rnd.random() < 0.05:
        headers[0] = rnd.choice(["POST  /v1/completions HTTP/1.1", "POST /v1/completions HTTP/9.9", "\x00\x01",
                                 "GET /v1/completions?x=" + "%" * 100 + " HTTP/1.1", "POST " + "/a" * 5000 + " HTTP/1.1"])
    return ("\r\n".join(headers) + "\r\n\r\n").encode() + body


class Fuzz(unittest.TestCase):
    def test_random_hostile_requests(self):
        rnd = random.Random(SEED)
        with Server(config_extra="[server]\nread_timeout_s = 1.0\nmax_body_kib = 64\n") as s:
            statuses = {}
            for case in range(CASES):
                path, body = rnd.choice(BASE)
                if rnd.random() < 0.5:
                    data = json.dumps(mutate_value(rnd, body)).encode()
                else:
                    data = mutate_bytes(rnd, json.dumps(body).encode())
                req = http(path, data, rnd)
                where = f"seed {SEED} case {case}: {req[:300]!r}"
                try:
                    status, headers, payload = raw(s.port, req, timeout=30)
                except OSError as e:
                    self.fail(f"no answer within 30 s ({e}) at {where}")
                statuses[status] = statuses.get(status, 0) + 1
                self.assertIsNone(s.proc.poll(), "the server died at " + where)
                self.assertLess(status, 500, where + f" -> {status} {payload[:300]!r}")
                if 400 <= status < 500:
                    self.assertIn("error", json.loads(payload), where)
                if case % 50 == 0:
                    self.assertEqual(get(s.port, "/health")[0], 200, where)
            print(f"fuzz: {CASES} cases, statuses {sorted(statuses.items())}", file=sys.stderr)
            self.assertTrue(wait_until(lambda: metric(s.port, "flywheel:num_requests_running") == 0 and
                                       metric(s.port, "flywheel:kv_cache_usage_perc") == 0, 30))
            self.assertGreater(statuses.get(400, 0), CASES // 4)  # the mutations mostly are bad input
            self.assertGreater(statuses.get(200, 0), 0)           # and some stay valid


if __name__ == "__main__":
    unittest.main(verbosity=2)
