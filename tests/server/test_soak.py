"""`flywheel bench soak` through the real binary, CI-sized (label: server): the shipped
customer-service workload through the real server (a decode node in the soak's process, its
prefill node a child process) for 60 s (a request a second) while a fault is injected about every 0.7 s: the decode,
prefill and draft workers die, a sequence's KV fails to grow, a KV stream is damaged in transit,
the prefill node is killed with SIGKILL and restarted on its port, clients leave mid-stream, the
draft plugin is reloaded, a telemetry drill plays. Checked from its JSON: every kind was injected
several times with requests in flight; no request was lost (every finished one has the tokens of
an undisturbed greedy run, none hung, none failed without a clear error); after the drain no
request runs, every KV block is back, no HTTP connection is open and no file descriptor leaked;
the prefill node's process is gone. A soak stopped with SIGTERM takes its prefill node along. A bad
flag is refused before anything starts."""
import json
import os
import signal
import subprocess
import tempfile
import time
import unittest

FLYWHEEL = os.environ.get("FW_FLYWHEEL", "build/tools/flywheel")
SRC = os.environ.get("FW_SOURCE_DIR", ".")


class Soak(unittest.TestCase):
    def test_every_fault_kind_under_load_loses_nothing_and_leaks_nothing(self):
        d = tempfile.mkdtemp(prefix="fw_soak_")
        out = os.path.join(d, "soak.json")
        # Resident memory is judged by the 10-minute run (README); 60 s is too short for a warm-up.
        # One request a second: below what the faults leave of a 2-core AVX2 host's capacity (at 2/s
        # a Zen 3 host fell behind: requests took 48 s at the median, the slowest 123 s with a retry,
        # and a busier host ran past the hang bound). ctest runs it alone (RUN_SERIAL). Alone at 1/s
        # this host's slowest took 50-89 s from arrival to end (retries included): an attempt is hung
        # after 180 s, not the 120 s default, for a slower shared CI host.
        p = subprocess.run([FLYWHEEL, "bench", "soak", "--duration", "60", "--rate", "1", "--fault-every", "0.7",
                            "--seed", "7", "--rss-bound", "10", "--hang-s", "180", "--work-dir", d, "--out", out],
                           capture_output=True, text=True, timeout=560, cwd=SRC)
        print(p.stdout[-2500:])  # the soak's table, in ctest's log
        self.assertTrue(os.path.exists(out), p.stdout[-3000:] + p.stderr[-3000:])
        with open(out) as f:
            r = json.load(f)
        # One short line on every failure: a CI log's last lines are often all a reader gets.
        s = r["resources"]
        digest = json.dumps({"problems": r["problems"], "requests": r["requests"],
                             "injected": {k: f["injected"] for k, f in r["faults"].items()},
                             "skipped": r["faults_skipped"], "prefill_node": r.get("prefill_node"),
                             "worker_restarts": s["worker_restarts"], "fds": [s["fds_idle"], s["fds_end"]]})
        self.assertEqual(r["problems"], [], digest)
        self.assertEqual(r["verdict"], "pass", digest)
        self.assertEqual(p.returncode, 0, digest)
        q = r["requests"]
        self.assertGreaterEqual(q["total"], 40, digest)  # Poisson, 60 expected
        self.assertEqual(q["lost"], 0, digest)
        self.assertEqual(q["changed"], 0, digest)
        self.assertEqual(q["failed"], 0, digest)
        self.assertGreater(q["same"], 0.8 * q["total"], digest)
        for kind, f in r["faults"].items():
            # A damaged stream needs a stream in flight while it is armed: fewer.
            self.assertGreaterEqual(f["injected"], 1 if kind == "kv_stream" else 3, kind + " " + digest)
        hit = sum(f["requests_in_flight"] for f in r["faults"].values())
        self.assertGreater(hit, 50, digest)
        self.assertEqual(sorted(r["faults"]), sorted(["decode_worker", "prefill_worker", "draft_actor", "kv_reserve",
                                                       "kv_stream", "prefill_node_kill", "client_disconnect",
                                                       "plugin_reload", "drill"]), digest)
        self.assertEqual(s["requests_running"], 0, digest)
        self.assertEqual(s["kv_used_blocks"], s["prefix_cache_blocks"], digest)
        self.assertEqual(s["open_connections"], 0, digest)
        self.assertLessEqual(s["fds_end"], s["fds_idle"] + 2, digest)
        self.assertGreaterEqual(s["worker_restarts"], 6, digest)
        self.assertEqual(r["prefill_node"]["state"], "connected", digest)
        self.assertGreater(r["prefill_node"]["prefills"], 0, digest)
        # This run's node only (its config is in this run's work dir).
        left = subprocess.run(["pgrep", "-f", os.path.join(d, "prefill_node.toml")], capture_output=True,
                              text=True).stdout.split()
        self.assertEqual(left, [], "the prefill node outlived the soak")

    def test_a_soak_stopped_with_sigterm_takes_its_prefill_node_along(self):
        d = tempfile.mkdtemp(prefix="fw_soak_term_")
        log_path = os.path.join(d, "stderr.log")
        node_conf = os.path.join(d, "prefill_node.toml")
        with open(log_path, "w") as log:
            p = subprocess.Popen([FLYWHEEL, "bench", "soak", "--duration", "60", "--work-dir", d,
                                  "--out", os.path.join(d, "soak.json")], stdout=subprocess.DEVNULL, stderr=log, cwd=SRC)
        try:
            deadline = time.time() + 120
            while time.time() < deadline and p.poll() is None:
                with open(log_path) as f:
                    if "soak: the reference run" in f.read():  # the node is up and connected
                        break
                time.sleep(0.2)
            node = subprocess.run(["pgrep", "-f", node_conf], capture_output=True, text=True).stdout.split()
            self.assertEqual(len(node), 1, open(log_path).read()[-2000:])
            p.send_signal(signal.SIGTERM)
            self.assertEqual(p.wait(timeout=30), -signal.SIGTERM)
            deadline = time.time() + 10
            while time.time() < deadline and subprocess.run(["pgrep", "-f", node_conf]).returncode == 0:
                time.sleep(0.1)
            left = subprocess.run(["pgrep", "-f", node_conf], capture_output=True, text=True).stdout.split()
            self.assertEqual(left, [], "the prefill node outlived a soak stopped with SIGTERM")
        finally:
            if p.poll() is None:
                p.kill()
            subprocess.run(["pkill", "-9", "-f", node_conf])

    def test_bad_flags_are_refused_before_anything_starts(self):
        for args, want in ((["--duration", "0"], "--duration"), (["--rate", "x"], "--rate"),
                           (["--config", "/nonexistent.toml"], "nonexistent")):
            p = subprocess.run([FLYWHEEL, "bench", "soak", *args], capture_output=True, text=True, timeout=60, cwd=SRC)
            self.assertNotEqual(p.returncode, 0)
            self.assertIn(want, p.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
