"""Several processes on loopback: `flywheel serve --role prefill` nodes and a `--role decode` node
that serves the clients (the official `openai` client and raw HTTP). Greedy output equals a
single process with two and three processes; `kill -9` of the prefill process with 16 requests in
flight loses none and changes no token; the restarted prefill process gets the traffic again; a
prefill node serving another model is refused by the handshake (both logs name both sides);
random bytes and HTTP sent to the prefill port are dropped; nodes that share a secret (one from
[node] secret_file, one from FLYWHEEL_NODE_SECRET) prove it and serve, and a decode node without
it is refused; nodes with [node] tls_* (certificates from one CA, made by the openssl CLI) link
over TLS and serve, a decode node without TLS cannot link and prefills its prompts itself, and
unusable TLS files are refused at start; every process keeps serving."""
import concurrent.futures
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

import openai

sys.path.insert(0, os.path.dirname(__file__))
from fw_server import MODEL_ID, SOURCE_DIR, PrefillNode, Server, metric, metrics, post, wait_until  # noqa: E402

# Fast heartbeats and reconnects; a deadline long enough that only a lost node fails prompts over
# (16 long prompts queue for several seconds on one prefill process).
FAST = ("[node]\nheartbeat_ms = 100\nheartbeat_timeout_ms = 1000\nreconnect_ms = 50\nreconnect_max_ms = 400\n"
        "deadline_ms = 60000\n")
WORDS = ("river stone lantern orbit meadow copper violet engine harbor whisper summit basket thunder "
         "mirror garden falcon").split()


def long_prompt(i, words=700):
    return f"Story {i}: " + " ".join(WORDS[(i * 7 + j * 3) % len(WORDS)] for j in range(words)) + ". In short,"


SHORT = [f"Question {i}: name a colour and a fruit that go together, and say why." for i in range(8)]
LONG = [long_prompt(i) for i in range(16)]


def complete(port, prompt, max_tokens=16):
    status, _, body = post(port, "/v1/completions",
                           {"prompt": prompt, "max_tokens": max_tokens, "temperature": 0}, timeout=600)
    assert status == 200, (status, body[:300])
    import json
    return json.loads(body)["choices"][0]["text"]


def complete_all(port, prompts, max_tokens=16):
    with concurrent.futures.ThreadPoolExecutor(len(prompts)) as ex:
        return list(ex.map(lambda p: complete(port, p, max_tokens), prompts))


def peer_series(port, name):
    """{peer address: value} of a per-peer node metric."""
    out = {}
    for k, v in metrics(port).items():
        if k.split("{")[0] == name and 'peer="' in k:
            out[k.split('peer="')[1].split('"')[0]] = v
    return out


def openssl(*args):
    subprocess.run(["openssl", *args], check=True, capture_output=True)


def make_ca(d, name):
    cert, key = os.path.join(d, name + ".pem"), os.path.join(d, name + ".key")
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2",
            "-subj", "/CN=" + name, "-addext", "basicConstraints=critical,CA:TRUE", "-keyout", key, "-out", cert)
    return cert, key


def issue(d, ca, name, days=2):
    """A certificate `name` signed by `ca`, valid from now for `days` (< 0: one that has expired)."""
    cert, key, csr = (os.path.join(d, name + ext) for ext in (".pem", ".key", ".csr"))
    openssl("req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=" + name,
            "-keyout", key, "-out", csr)
    openssl("x509", "-req", "-in", csr, "-CA", ca[0], "-CAkey", ca[1], "-CAcreateserial", "-days", str(days), "-out", cert)
    return cert, key


def tls_keys(cert, key, ca):
    return f'[node]\ntls_cert = "{cert}"\ntls_key = "{key}"\ntls_ca = "{ca}"\n'


class Nodes(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with Server() as ref:
            cls.short = complete_all(ref.port, SHORT)
            cls.long = complete_all(ref.port, LONG)

    def decode_node(self, *peers):
        return Server("--role", "decode", "--peer", ",".join(p.address for p in peers), config_extra=FAST)

    def test_two_processes_give_the_tokens_of_one(self):
        with PrefillNode() as pn, self.decode_node(pn) as dn:
            self.assertTrue(wait_until(lambda: metric(dn.port, "flywheel:node_peer_connected") == 1, 30))
            client = openai.OpenAI(base_url=dn.base + "/v1", api_key="unused", max_retries=0)
            with concurrent.futures.ThreadPoolExecutor(8) as ex:
                got = list(ex.map(lambda p: client.completions.create(
                    model=MODEL_ID, prompt=p, max_tokens=16, temperature=0).choices[0].text, SHORT))
            self.assertEqual(got, self.short)
            self.assertEqual(complete_all(dn.port, LONG[:4]), self.long[:4])
            self.assertEqual(peer_series(dn.port, "flywheel:node_peer_prefills_total"), {pn.address: 12},
                             "".join(dn.stderr_lines))
            self.assertEqual(metric(dn.port, "flywheel:node_local_prefills_total"), 0)
            self.assertGreater(metric(dn.port, "flywheel:node_peer_transfer_bytes_total"), 12 * 40)
            self.assertIn("connected", pn.log())

    def test_three_processes_share_the_prompts(self):
        with PrefillNode() as a, PrefillNode() as b, self.decode_node(a, b) as dn:
            self.assertTrue(wait_until(lambda: metric(dn.port, "flywheel:node_peer_connected") == 2, 30))
            self.assertEqual(complete_all(dn.port, SHORT), self.short)
            served = peer_series(dn.port, "flywheel:node_peer_prefills_total")
            self.assertEqual(sorted(served), sorted([a.address, b.address]))
            self.assertGreater(served[a.address], 0)
            self.assertGreater(served[b.address], 0)
            self.assertEqual(sum(served.values()), 8)

    def test_kill_9_of_the_prefill_process_loses_no_request_and_its_restart_gets_traffic(self):
        pn = PrefillNode()
        port = pn.port
        with self.decode_node(pn) as dn:
            self.assertTrue(wait_until(lambda: metric(dn.port, "flywheel:node_peer_connected") == 1, 30))
            with concurrent.futures.ThreadPoolExecutor(16) as ex:
                futs = [ex.submit(complete, dn.port, p) for p in LONG]
                # Killed once it has sent back at least one prompt's KV and has more queued.
                self.assertTrue(wait_until(lambda: metric(dn.port, "flywheel:node_peer_prefills_total") >= 1, 60, 0.02))
                pn.proc.send_signal(signal.SIGKILL)
                pn.stop()
                got = [f.result(600) for f in futs]
            self.assertEqual(got, self.long)
            remote = metric(dn.port, "flywheel:node_peer_prefills_total")
            local = metric(dn.port, "flywheel:node_local_prefills_total")
            self.assertLess(remote, 16)
            self.assertEqual(remote + local, 16)
            self.assertGreaterEqual(metric(dn.port, "flywheel:node_peer_failovers_total"), 1)
            self.assertIn("lost: connection lost", "".join(dn.stderr_lines))
            self.assertTrue(wait_until(lambda: metric(dn.port, "flywheel:node_peer_connected") == 0, 10))
            self.assertEqual(complete_all(dn.port, SHORT[:2]), self.short[:2])  # served alone meanwhile

            with PrefillNode(port) as back:
                self.assertTrue(wait_until(lambda: metric(dn.port, "flywheel:node_peer_connected") == 1, 30))
                # (SHORT[:2] are in the prefix cache now: those stay local.)
                self.assertEqual(complete_all(dn.port, SHORT[4:]), self.short[4:])
                self.assertEqual(metric(dn.port, "flywheel:node_peer_prefills_total"), remote + 4)
                self.assertGreaterEqual(metric(dn.port, "flywheel:node_peer_connects_total"), 2)
                self.assertIn("connected", back.log())

    def test_a_peer_with_another_model_is_refused_and_garbage_on_the_port_is_dropped(self):
        with tempfile.TemporaryDirectory() as d:
            tiny = os.path.join(d, "tiny.gguf")
            subprocess.run([os.environ["FW_TINY_MODEL"], "--out", tiny, "--embd", "64", "--ff", "128", "--layers", "2"],
                           check=True, stdout=subprocess.DEVNULL)
            conf = os.path.join(d, "tiny.toml")
            with open(conf, "w") as f:
                f.write(f'[model]\npath = "{tiny}"\n')
            with PrefillNode(config=conf) as wrong, PrefillNode() as right:
                for n in (1, 13, 4096, 200000):
                    with socket.create_connection(("127.0.0.1", right.port)) as s:
                        s.sendall(os.urandom(n))
                with socket.create_connection(("127.0.0.1", right.port)) as s:
                    s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
                with self.decode_node(wrong, right) as dn:
                    self.assertTrue(wait_until(lambda: "refused" in "".join(dn.stderr_lines), 30))
                    self.assertTrue(wait_until(lambda: metric(dn.port, "flywheel:node_peer_connected") == 1, 30))
                    self.assertEqual(complete_all(dn.port, SHORT[:4]), self.short[:4])
                    served = peer_series(dn.port, "flywheel:node_peer_prefills_total")
                    self.assertEqual(served.get(wrong.address, 0), 0)
                    self.assertEqual(served[right.address], 4)
                    log = "".join(dn.stderr_lines)
                    line = next(l for l in log.splitlines() if "refused" in l)
                    self.assertIn(wrong.address, line)
                    self.assertIn("model", line)
                    self.assertIn("decode node", line)
                    self.assertIn("prefill node", line)
                self.assertIn("refused decode node", wrong.log())
                self.assertIsNone(wrong.proc.poll())
                self.assertIsNone(right.proc.poll())

    def test_nodes_that_share_a_secret_serve_and_a_node_without_it_is_refused(self):
        secret = os.urandom(24).hex()
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "node.secret")
            with open(path, "w") as f:
                f.write(secret + "\n")
            os.chmod(path, 0o600)
            with PrefillNode(env={"FLYWHEEL_NODE_SECRET": secret}) as pn:
                self.assertIn("peers must prove the shared secret", pn.log())
                with Server("--role", "decode", "--peer", pn.address,
                            config_extra=FAST + f'secret_file = "{path}"\n') as dn:
                    self.assertTrue(wait_until(lambda: metric(dn.port, "flywheel:node_peer_connected") == 1, 30),
                                    "".join(dn.stderr_lines))
                    self.assertEqual(complete_all(dn.port, SHORT[:4]), self.short[:4])
                    self.assertEqual(metric(dn.port, "flywheel:node_peer_prefills_total"), 4)
                    self.assertEqual(metric(dn.port, "flywheel:node_peer_forged_total"), 0)
                self.assertIn("proved the shared secret", pn.log())
                with self.decode_node(pn) as open_dn:
                    self.assertTrue(wait_until(lambda: "requires the nodes' shared secret" in "".join(open_dn.stderr_lines), 30))
                    self.assertIn("unauthenticated", "".join(open_dn.stderr_lines))
                    self.assertEqual(complete_all(open_dn.port, SHORT[:2]), self.short[:2])
                    self.assertEqual(metric(open_dn.port, "flywheel:node_local_prefills_total"), 2)
                self.assertIsNone(pn.proc.poll())

    def test_nodes_over_tls_serve_and_a_node_without_tls_or_with_bad_files_is_refused(self):
        with tempfile.TemporaryDirectory() as d:
            ca = make_ca(d, "nodes-ca")
            pn_tls = tls_keys(*issue(d, ca, "prefill"), ca[0])
            dn_tls = tls_keys(*issue(d, ca, "decode"), ca[0])
            with PrefillNode(config_extra=pn_tls) as pn:
                self.assertIn("TLS: peers must present a certificate tls_ca verifies", pn.log())
                with Server("--role", "decode", "--peer", pn.address, config_extra=FAST + dn_tls) as dn:
                    self.assertTrue(wait_until(lambda: metric(dn.port, "flywheel:node_peer_connected") == 1, 30),
                                    "".join(dn.stderr_lines))
                    self.assertEqual(complete_all(dn.port, SHORT[:4]), self.short[:4])
                    self.assertEqual(metric(dn.port, "flywheel:node_peer_prefills_total"), 4)
                # A decode node without TLS: the TLS handshake fails, it prefills here.
                with self.decode_node(pn) as plain:
                    self.assertTrue(wait_until(lambda: "a prefill node on TLS drops" in "".join(plain.stderr_lines), 30),
                                    "".join(plain.stderr_lines))
                    self.assertEqual(complete_all(plain.port, SHORT[:2]), self.short[:2])
                    self.assertEqual(metric(plain.port, "flywheel:node_local_prefills_total"), 2)
                self.assertIsNone(pn.proc.poll())
            # Unusable files: refused at start, naming the key.
            expired_cert, expired_key = issue(d, ca, "expired", days=-1)
            for extra, want in ((tls_keys(expired_cert, expired_key, ca[0]), "the certificate has expired"),
                                (f'[node]\ntls_cert = "{ca[0]}"\n', "go together"),
                                (tls_keys(ca[0], expired_key, ca[0]), "not the private key of node.tls_cert")):
                with self.assertRaises(RuntimeError) as e:
                    Server("--role", "decode", "--peer", "127.0.0.1:1", config_extra=extra, startup_s=60)
                self.assertIn(want, str(e.exception))

    def test_a_decode_node_pointed_at_a_port_that_is_not_a_prefill_node_serves_alone(self):
        with Server() as http_only:
            class Fake:
                address = f"127.0.0.1:{http_only.port}"
            with Server("--role", "decode", "--peer", Fake.address, config_extra=FAST) as dn:
                self.assertEqual(complete_all(dn.port, SHORT[:2]), self.short[:2])
                self.assertEqual(metric(dn.port, "flywheel:node_local_prefills_total"), 2)
                self.assertEqual(metric(dn.port, "flywheel:node_peer_connected"), 0)
            self.assertIsNone(http_only.proc.poll())


if __name__ == "__main__":
    unittest.main(verbosity=2)
