"""HTTPS through `[server] tls_cert` / `tls_key` (label: server): a self-signed certificate made by
the openssl CLI; the official `openai` client (trusting that certificate) gets the same completion
streamed and whole; plain HTTP on the TLS port gets no HTTP answer and a client that does not trust
the certificate fails its handshake, and the server keeps serving; a missing key, a certificate
without its key and a key of another certificate are refused at start with a message naming the
key."""
import os
import socket
import subprocess
import sys
import tempfile
import unittest

import httpx
import openai

sys.path.insert(0, os.path.dirname(__file__))
from fw_server import MODEL_ID, Server  # noqa: E402


def make_cert(d, name):
    cert, key = os.path.join(d, name + ".pem"), os.path.join(d, name + ".key")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", key, "-out", cert],
                   check=True, capture_output=True)
    return cert, key


def tls_config(cert, key):
    return f'[server]\ntls_cert = "{cert}"\ntls_key = "{key}"\n'


class Tls(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="fw_tls_")
        cls.cert, cls.key = make_cert(cls.dir, "a")
        cls.other_cert, cls.other_key = make_cert(cls.dir, "b")

    def test_https_serves_the_openai_client_and_drops_what_is_not_tls(self):
        with Server(config_extra=tls_config(self.cert, self.key)) as s:
            self.assertTrue(s.base.startswith("https://"), s.base)
            client = openai.OpenAI(base_url=s.base + "/v1", api_key="unused", max_retries=0,
                                   http_client=httpx.Client(verify=self.cert))
            messages = [{"role": "user", "content": "Name a colour."}]
            whole = client.chat.completions.create(model=MODEL_ID, messages=messages, max_tokens=12, temperature=0)
            text = whole.choices[0].message.content
            self.assertTrue(text)
            streamed = "".join(c.choices[0].delta.content or "" for c in client.chat.completions.create(
                model=MODEL_ID, messages=messages, max_tokens=12, temperature=0, stream=True) if c.choices)
            self.assertEqual(streamed, text)

            # Plain HTTP to the TLS port: no HTTP answer, the connection ends.
            with socket.create_connection(("127.0.0.1", s.port), timeout=10) as c:
                c.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
                got = b""
                try:
                    while True:
                        piece = c.recv(4096)
                        if not piece:
                            break
                        got += piece
                except (ConnectionResetError, socket.timeout):
                    pass
                self.assertNotIn(b"HTTP/1.1", got)
            # A client that does not trust the certificate fails the handshake.
            with self.assertRaises(httpx.ConnectError):
                httpx.get(s.base + "/health", timeout=10)
            # Still serving.
            self.assertEqual(httpx.get(s.base + "/health", verify=self.cert, timeout=10).status_code, 200)
            self.assertIsNone(s.proc.poll())

    def test_a_missing_mismatched_or_lone_key_is_refused_at_start(self):
        for extra, want in ((tls_config(self.cert, os.path.join(self.dir, "missing.key")), "server.tls_key"),
                            (tls_config(self.cert, self.other_key), "mismatch"),
                            (f'[server]\ntls_cert = "{self.cert}"\n', "go together")):
            with self.assertRaises(RuntimeError) as e:
                Server(config_extra=extra, startup_s=60)
            self.assertIn(want, str(e.exception))


if __name__ == "__main__":
    unittest.main(verbosity=2)
