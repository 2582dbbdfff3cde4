"""Malformed and hostile requests against the real `flywheel serve`: each gets its 4xx with an
OpenAI-style error object naming the problem (never a 5xx, crash or hang), while a prober keeps
getting /health answers."""
import json
import os
import socket
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from fw_server import MODEL_ID, Server, get, metric, metrics, post, raw, wait_until  # noqa: E402

CHAT = "/v1/chat/completions"
COMP = "/v1/completions"
USER = [{"role": "user", "content": "hi"}]


def chat(**kw):
    return {"model": MODEL_ID, "messages": USER, "max_tokens": 4, **kw}


def comp(**kw):
    return {"model": MODEL_ID, "prompt": "hi", "max_tokens": 4, **kw}


def req(method, path, body=b"", extra=""):
    return (f"{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n{extra}\r\n").encode() + body


# (name, path or None for raw bytes, body (dict/bytes) or raw request bytes, status, text in the message)
CASES = [
    ("empty body", CHAT, b"", 400, "empty"),
    ("not JSON", CHAT, b"hello there", 400, "not valid JSON"),
    ("truncated JSON", CHAT, b'{"messages": [{"role": "user", "cont', 400, "not valid JSON"),
    ("NaN", COMP, b'{"prompt": "x", "temperature": NaN}', 400, "not valid JSON"),
    ("Infinity", COMP, b'{"prompt": "x", "temperature": Infinity}', 400, "not valid JSON"),
    ("invalid UTF-8", COMP, b'{"prompt": "\xff\xfe\xfd"}', 400, "not valid JSON"),
    ("trailing garbage", COMP, b'{"prompt": "x"} {"prompt": "y"}', 400, "not valid JSON"),
    ("deep nesting", COMP, b'{"prompt": ' + b"[" * 30000 + b"]" * 30000 + b"}", 400, "nests deeper"),
    ("top-level array", COMP, b"[1, 2, 3]", 400, "must be a JSON object"),
    ("prompt wrong type", COMP, {"prompt": 5}, 400, "prompt must be"),
    ("prompt missing", COMP, {"model": MODEL_ID}, 400, "prompt is required"),
    ("batch of mixed prompts", COMP, comp(prompt=["a", 1]), 400, "a batch of strings holds strings only"),
    ("empty token-id prompt in a batch", COMP, comp(prompt=[[1], []]), 400, "prompt[1] is an empty token-id array"),
    ("batch beyond the window", COMP, comp(prompt=[[1], [1] * 9000]), 400, "prompt[1]: "),
    ("too many choices", COMP, comp(prompt=["a"] * 10, n=7), 400, "70 choices; at most 64"),
    ("token id outside vocabulary", COMP, comp(prompt=[1, 2, 99999999]), 400, "vocabulary"),
    ("negative token id", COMP, comp(prompt=[1, -5]), 400, "out of range"),
    ("messages missing", CHAT, {"model": MODEL_ID}, 400, "messages is required"),
    ("messages empty", CHAT, chat(messages=[]), 400, "must not be empty"),
    ("messages not an array", CHAT, chat(messages="hi"), 400, "messages must be an array"),
    ("unknown role", CHAT, chat(messages=[{"role": "wizard", "content": "x"}]), 400, "wizard"),
    ("content wrong type", CHAT, chat(messages=[{"role": "user", "content": 5}]), 400, "content"),
    ("image content part", CHAT, chat(messages=[{"role": "user", "content": [{"type": "image_url"}]}]), 400,
     "image_url"),
    ("temperature below 0", CHAT, chat(temperature=-0.5), 400, "temperature"),
    ("temperature a string", CHAT, chat(temperature="hot"), 400, "temperature must be a number"),
    ("top_p 0", CHAT, chat(top_p=0), 400, "top_p"),
    ("top_p above 1", CHAT, chat(top_p=1.5), 400, "top_p"),
    ("min_p above 1", CHAT, chat(min_p=2), 400, "min_p"),
    ("presence_penalty out of range", CHAT, chat(presence_penalty=3), 400, "presence_penalty"),
    ("max_tokens 0", CHAT, chat(max_tokens=0), 400, "max_tokens"),
    ("max_tokens huge", CHAT, chat(max_tokens=10**12), 400, "max_tokens"),
    ("max_tokens a float", CHAT, chat(max_tokens=3.5), 400, "max_tokens must be an integer"),
    ("max_tokens beyond the window", CHAT, chat(max_tokens=100000), 400, "context window"),
    ("seed beyond 64 bits", CHAT, chat(seed=2**64), 400, "seed"),
    ("negative seed", CHAT, chat(seed=-1), 400, "seed"),
    ("n = 65", CHAT, chat(n=65), 400, "n = 65"),
    ("n = 0", CHAT, chat(n=0), 400, "n = 0"),
    ("best_of above n", CHAT, chat(n=2, best_of=3), 400, "best_of = 3"),
    ("top_logprobs without logprobs", CHAT, chat(top_logprobs=5), 400, "needs logprobs"),
    ("completions logprobs above the cap", COMP, comp(logprobs=21), 400, "logprobs"),
    ("top_logprobs above the cap", CHAT, chat(top_logprobs=50), 400, "top_logprobs"),
    ("tools not an array", CHAT, chat(tools={"type": "function"}), 400, "tools must be an array"),
    ("a tool's schema with an unsupported keyword", CHAT,
     chat(tools=[{"type": "function", "function": {"name": "f", "parameters": {
         "type": "object", "properties": {"n": {"type": "integer", "minimum": 0}}}}}]), 400,
     "tools[0].function.parameters"),
    ("tool_choice naming an unlisted function", CHAT,
     chat(tools=[{"type": "function", "function": {"name": "f"}}],
          tool_choice={"type": "function", "function": {"name": "g"}}), 400, "which tools does not list"),
    ("a grammar with an undefined rule", CHAT, chat(guided_grammar="root ::= x"), 400, "x is used but not defined"),
    ("a left-recursive grammar", COMP, comp(grammar='root ::= root "a" | "a"'), 400, "left recursion"),
    ("too many stop strings", CHAT, chat(stop=[str(i) for i in range(20)]), 400, "stop"),
    ("empty stop string", CHAT, chat(stop=[""]), 400, "stop"),
    ("stream_options without stream", CHAT, chat(stream_options={"include_usage": True}), 400, "stream_options"),
    ("stream a string", CHAT, chat(stream="yes"), 400, "stream must be a boolean"),
    ("unknown model", CHAT, chat(model="gpt-4o"), 404, "does not exist"),
    ("model not a string", CHAT, chat(model=7), 400, "model must be a string"),
    ("prompt over the context window", COMP, comp(prompt="hello " * 5000, max_tokens=None), 400, "context window"),
    ("a bad stream request is JSON, not SSE", CHAT, chat(stream=True, temperature=-1), 400, "temperature"),
    ("unknown route", "/v1/embeddings", comp(), 404, "no route"),
    ("GET on a POST route", None, req("GET", COMP), 405, "not allowed"),
    ("body over the limit", COMP, b'{"prompt": "' + b"a" * (80 * 1024) + b'"}', 413, "larger than"),
    ("malformed request line", None, b"GARBAGE\r\n\r\n", 400, "malformed HTTP"),
    ("bad Content-Length", None, b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n", 400,
     "malformed HTTP"),
    ("headers over 16 KiB", None, req("GET", "/health", extra="X-Big: " + "a" * 20000 + "\r\n"), 431, "too large"),
]


class HostileInput(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server(config_extra="[server]\nread_timeout_s = 1.0\nmax_body_kib = 64\n")

    @classmethod
    def tearDownClass(cls):
        assert cls.server.stop() == 0

    def setUp(self):
        self.port = self.server.port

    def test_table(self):
        self.assertGreaterEqual(len(CASES), 25)
        probe_max = [0.0]
        probe_fail = []
        stop = threading.Event()

        def prober():
            while not stop.is_set():
                t = time.time()
                try:
                    status = get(self.port, "/health", timeout=5)[0]
                    if status != 200:
                        probe_fail.append(status)
                except OSError as e:
                    probe_fail.append(str(e))
                probe_max[0] = max(probe_max[0], time.time() - t)
                time.sleep(0.02)

        th = threading.Thread(target=prober)
        th.start()
        try:
            for name, path, body, status, text in CASES:
                with self.subTest(name):
                    if path is None:
                        got, headers, payload = raw(self.port, body)
                    else:
                        if isinstance(body, dict):
                            body = {k: v for k, v in body.items() if v is not None}
                        got, headers, payload = post(self.port, path, body)
                    self.assertEqual(got, status, payload[:300])
                    self.assertTrue(headers.get("content-type", "").startswith("application/json"), headers)
                    err = json.loads(payload)["error"]
                    self.assertIn(text, err["message"])
                    self.assertIn("type", err)
                    self.assertEqual(get(self.port, "/health")[0], 200, f"after {name}")
        finally:
            stop.set()
            th.join()
        self.assertEqual(probe_fail, [])
        self.assertLess(probe_max[0], 2.0)
        self.assertTrue(wait_until(lambda: metric(self.port, "flywheel:num_requests_running") == 0 and
                                   metric(self.port, "flywheel:kv_cache_usage_perc") == 0, 5))

    def test_lying_content_length_gets_408(self):
        start = time.time()
        body = b'{"prompt": "x"}'
        got, _, payload = raw(self.port, (f"POST {COMP} HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n").encode()
                              + body, timeout=10)
        self.assertEqual(got, 408, payload)
        self.assertIn("did not arrive", json.loads(payload)["error"]["message"])
        self.assertLess(time.time() - start, 5)

    def test_slow_headers_get_408(self):
        s = socket.create_connection(("127.0.0.1", self.port), timeout=10)
        try:
            s.sendall(b"GET /health HTTP/1.1\r\nHo")
            start = time.time()
            data = s.recv(4096)
            self.assertIn(b" 408 ", data.split(b"\r\n")[0])
            self.assertLess(time.time() - start, 5)
        finally:
            s.close()

    def test_many_idle_connections_do_not_block_health(self):
        socks = [socket.create_connection(("127.0.0.1", self.port)) for _ in range(200)]
        try:
            t = time.time()
            self.assertEqual(get(self.port, "/health")[0], 200)
            self.assertLess(time.time() - t, 1.0)
        finally:
            for s in socks:
                s.close()

    def test_client_that_leaves_mid_request_frees_its_kv(self):
        s = socket.create_connection(("127.0.0.1", self.port))
        # Counting goes on for all 3000 tokens (many seconds here) unless the request is cancelled.
        body = json.dumps(comp(prompt="1, 2, 3, 4,", max_tokens=3000, temperature=0)).encode()
        s.sendall(req("POST", COMP, body))
        time.sleep(0.5)
        s.close()
        # Cancelled, not run to its end: the server counts the client's close (499) at once.
        self.assertTrue(wait_until(lambda: metric(self.port, "flywheel:num_requests_running") == 0 and
                                   metric(self.port, "flywheel:kv_cache_usage_perc") == 0, 3))
        closed = sum(v for k, v in metrics(self.port).items()
                     if k.startswith("flywheel:http_requests_total") and 'code="499"' in k)
        self.assertGreaterEqual(closed, 1)


if __name__ == "__main__":
    unittest.main(verbosity=2)
