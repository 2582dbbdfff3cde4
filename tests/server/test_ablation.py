"""`flywheel bench ablation` through the real binary (label: server): it derives each
configuration's TOML from conf/default.toml, starts a real `flywheel serve` child for each on
loopback, replays one arrival trace of a small workload through every one and through a peer
server (another `flywheel serve`, standing in for any OpenAI-compatible server), and writes the
table, ablation.json and ablation.svg. Checked: every request of every configuration completes
(the load is light), the configurations carry their levers (16-bit weights and FIFO whole-prompt
prefill in the baseline, the draft, decode priority and shortest-first prefill in "all"), the
server figures come from /metrics (prefix-cache lookups, prefill-to-decode latency), the
children are gone afterwards, and a recorded workload (at_s) replays at its own times. Bad input
(a malformed workload line, an unknown configuration, a bad --quant or rate) is refused with a
clear message before any server starts.
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from fw_server import Server  # noqa: E402

FLYWHEEL = os.environ.get("FW_FLYWHEEL", "build/tools/flywheel")
SRC = os.environ.get("FW_SOURCE_DIR", ".")
MODEL = os.path.join(SRC, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")
SYSTEM = {"role": "system", "content": "You are a bank's assistant. Answer briefly."}


def line(cls, text, max_tokens, at_s=None):
    d = {"class": cls, "messages": [SYSTEM, {"role": "user", "content": text}], "max_tokens": max_tokens}
    if at_s is not None:
        d["at_s"] = at_s
    return json.dumps(d)


def ticket(i):
    rows = "\n".join(f"2024-05-{d:02d} card payment merchant {i * 31 + d} amount {d * 7 + i}.{d:02d} USD"
                     for d in range(1, 15))
    return (f"Ticket #{900000 + i}: customer {i} reports charges they do not recognise.\n{rows}\n"
            "Summarise the complaint and say what the customer should do next.")


def run_bench(out, *args, timeout=600):
    p = subprocess.run([FLYWHEEL, "bench", "ablation", "--out", out, "--cache-dir", os.path.join(out, "cache"), *args],
                       capture_output=True, text=True, timeout=timeout, cwd=SRC)
    return p.returncode, p.stdout, p.stderr


def serve_children():
    p = subprocess.run(["pgrep", "-f", "serve --config .*/configs/"], capture_output=True, text=True)
    return p.stdout.split()


class Ablation(unittest.TestCase):
    def test_each_configuration_and_a_peer_serve_the_same_trace_through_real_servers(self):
        d = tempfile.mkdtemp(prefix="fw_ablation_")
        work = os.path.join(d, "work.jsonl")
        with open(work, "w") as f:
            for i in range(12):
                f.write((line("long", ticket(i), 8) if i % 4 == 1 else
                         line("short", f"Question {i}: how do I reset my card PIN?", 8)) + "\n")
        peer = Server()
        try:
            rc, out, err = run_bench(d, "--workload", work, "--only", "baseline,all", "--quant", MODEL,
                                     "--rate", "3", "--duration", "3", "--drain", "120", "--quality-chunks", "0",
                                     "--peer", f"http://127.0.0.1:{peer.port}")
        finally:
            peer.stop()
        self.assertEqual(rc, 0, err[-3000:])
        self.assertIn("| configuration | goodput/s |", out)
        self.assertIn("baseline (16-bit, co-located, no draft)", out)
        self.assertIn("all three", out)
        self.assertIn("against the baseline", out)
        with open(os.path.join(d, "ablation.json")) as f:
            r = json.load(f)
        names = [c["name"] for c in r["configs"]]
        self.assertEqual(names, ["baseline", "all", f"peer http://127.0.0.1:{peer.port}"])
        requests = None
        for c in r["configs"]:
            s = c["rates"][0]["summary"]
            if requests is None:
                requests = s["all"]["requests"]
                self.assertGreater(requests, 3)
            self.assertEqual(s["all"]["requests"], requests, c["name"] + ": the same trace for everyone")
            self.assertEqual(s["all"]["completed"], requests, c["name"] + ": " + json.dumps(s["all"]["errors"]))
            self.assertIn("short", s)
            self.assertGreater(s["all"]["ttft_ms"]["p50"], 0)
        base, all3 = r["configs"][0], r["configs"][1]
        self.assertEqual(base["levers"], {"weights": "f16", "draft": "none", "pd": "co-located"})
        self.assertEqual(all3["levers"]["draft"], "ngram")
        self.assertEqual(all3["levers"]["pd"], "logical")
        # The figures read from each server's /metrics: the baseline has no prefix cache, "all" has.
        self.assertIsNone(base["rates"][0]["server"]["prefix_cache_hit_rate"])
        self.assertIsNotNone(all3["rates"][0]["server"]["prefix_cache_hit_rate"])
        self.assertGreaterEqual(all3["rates"][0]["server"]["prefill_to_decode_ms"], 0)
        self.assertGreater(base["peak_rss_mib"], all3["peak_rss_mib"], "16-bit weights take more memory")
        with open(base["config"]) as f:
            text = f.read()
        self.assertIn('prefill_order = "fifo"', text)
        self.assertIn("decode_priority = false", text)
        self.assertIn(".f16.gguf", text)
        with open(all3["config"]) as f:
            text = f.read()
        self.assertIn('prefill_order = "shortest"', text)
        self.assertIn('draft = "ngram"', text)
        with open(os.path.join(d, "ablation.svg")) as f:
            svg = f.read()
        self.assertTrue(svg.startswith("<svg"))
        self.assertIn("all three", svg)
        self.assertEqual(serve_children(), [], "every flywheel serve child stopped")

    def test_a_recorded_workload_replays_at_its_own_times(self):
        d = tempfile.mkdtemp(prefix="fw_ablation_timed_")
        work = os.path.join(d, "timed.jsonl")
        with open(work, "w") as f:
            for i, t in enumerate([0.0, 0.1, 0.2, 1.5, 2.5, 9.0]):
                f.write(line("short", f"Question {i}: what is my card limit?", 4, at_s=t) + "\n")
        rc, out, err = run_bench(d, "--workload", work, "--only", "quant", "--quant", MODEL, "--duration", "3",
                                 "--quality-chunks", "0")
        self.assertEqual(rc, 0, err[-3000:])
        with open(os.path.join(d, "ablation.json")) as f:
            r = json.load(f)
        s = r["configs"][0]["rates"][0]["summary"]["all"]
        self.assertEqual(s["requests"], 5, "the lines at or before 3 s")
        self.assertEqual(s["completed"], 5)

    def test_bad_input_is_refused_before_any_server_starts(self):
        d = tempfile.mkdtemp(prefix="fw_ablation_bad_")
        bad = os.path.join(d, "bad.jsonl")
        with open(bad, "w") as f:
            f.write(line("short", "fine", 4) + "\n\n")
            f.write('{"class": "short", "messages": "not a list"}\n')
        rc, _, err = run_bench(d, "--workload", bad)
        self.assertEqual(rc, 2, err)
        self.assertIn("bad.jsonl:3:", err)
        self.assertIn('"messages" must be a non-empty array', err)
        rc, _, err = run_bench(d, "--only", "baseline,turbo")
        self.assertEqual(rc, 2)
        self.assertIn("unknown configuration 'turbo'", err)
        rc, _, err = run_bench(d, "--quant", "int3")
        self.assertEqual(rc, 2)
        self.assertIn("--quant: w8a8, w4a16 or a .gguf file", err)
        rc, _, err = run_bench(d, "--sweep", "1,fast")
        self.assertEqual(rc, 2)
        self.assertIn("'fast' is not a rate", err)
        self.assertFalse(os.path.exists(os.path.join(d, "logs", "baseline.log")), "no server was started")


if __name__ == "__main__":
    unittest.main(verbosity=2)
