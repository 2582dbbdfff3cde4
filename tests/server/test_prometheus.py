"""The real Prometheus tools on the real server: `promtool check metrics` on /metrics, `promtool
check rules` and `promtool test rules` on the shipped rules, and a Prometheus that scrapes the
server under load and answers every query of the shipped Grafana dashboard with data."""
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(__file__))
from fw_server import MODEL_ID, SOURCE_DIR, Server, get, post  # noqa: E402

RULES = os.path.join(SOURCE_DIR, "conf/prometheus/flywheel_rules.yml")
DASHBOARD = os.path.join(SOURCE_DIR, "conf/grafana/flywheel_dashboard.json")
HERE = os.path.dirname(os.path.abspath(__file__))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def load(port, stop):
    """Streaming and plain completions that repeat (so the ngram draft proposes), plus a bad one."""
    i = 0
    while not stop.is_set():
        body = {"model": MODEL_ID, "prompt": f"{i}: one two three, one two three, one two", "max_tokens": 12,
                "temperature": 0, "stream": i % 2 == 0}
        post(port, "/v1/completions", body)
        if i % 5 == 0:
            post(port, "/v1/completions", {"prompt": "x", "temperature": -1})
        i += 1


class Prometheus(unittest.TestCase):
    def test_promtool_checks_metrics_and_rules(self):
        self.assertIsNotNone(shutil.which("promtool"), "promtool is missing: scripts/setup.sh installs `prometheus`")
        with Server("--draft", "ngram") as s:
            for i in range(3):
                post(s.port, "/v1/completions", {"prompt": "one two three, one two three, one", "max_tokens": 8,
                                                 "temperature": 0})
            post(s.port, "/v1/completions", {"prompt": "x", "temperature": -1})
            status, _, body = get(s.port, "/metrics")
            self.assertEqual(status, 200)
            text = body.decode()
            for name in ("flywheel:time_to_first_token_seconds_bucket", "flywheel:inter_token_latency_seconds_bucket",
                         "flywheel:num_requests_waiting", "flywheel:kv_cache_usage_perc",
                         "flywheel:spec_decode_num_accepted_tokens_per_pos_total", "flywheel:alerts_firing",
                         "flywheel:prefill_to_decode_latency_seconds_bucket",
                         'flywheel:http_requests_total{route="/v1/completions",code="400"}'):
                self.assertIn(name, text)
            r = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True)
            # It parses (exit 1 would be a parse error); its one lint, on the ':' of vLLM-style names, is expected.
            problems = [l for l in (r.stdout + r.stderr).splitlines() if l and "should not contain ':'" not in l]
            self.assertIn(r.returncode, (0, 3), r.stdout + r.stderr)
            self.assertEqual(problems, [])
        r = subprocess.run(["promtool", "check", "rules", RULES], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("5 rules found", r.stdout)
        r = subprocess.run(["promtool", "test", "rules", "flywheel_rules_test.yml"], cwd=HERE, capture_output=True,
                           text=True)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_prometheus_scrapes_and_every_dashboard_query_has_data(self):
        self.assertIsNotNone(shutil.which("prometheus"), "prometheus is missing: scripts/setup.sh installs it")
        with open(DASHBOARD) as f:
            dashboard = json.load(f)
        queries = [(p["title"], t["expr"]) for p in dashboard["panels"] for t in p["targets"]]
        self.assertGreaterEqual(len(queries), 10)
        with Server("--draft", "ngram") as s, tempfile.TemporaryDirectory() as tmp:
            prom_port = free_port()
            cfg = os.path.join(tmp, "prometheus.yml")
            with open(cfg, "w") as f:
                f.write(f"global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nrule_files:\n  - {RULES}\n"
                        f"scrape_configs:\n  - job_name: flywheel\n    static_configs:\n"
                        f"      - targets: ['127.0.0.1:{s.port}']\n")
            prom = subprocess.Popen(["prometheus", f"--config.file={cfg}", f"--storage.tsdb.path={tmp}/data",
                                     f"--web.listen-address=127.0.0.1:{prom_port}"],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            stop = threading.Event()
            worker = threading.Thread(target=load, args=(s.port, stop))
            worker.start()
            try:
                api = f"http://127.0.0.1:{prom_port}/api/v1"

                def query(expr):
                    url = api + "/query?" + urllib.parse.urlencode({"query": expr})
                    with urllib.request.urlopen(url, timeout=10) as r:
                        return json.load(r)

                def has_data(expr):
                    try:
                        res = query(expr)
                    except OSError:
                        return False
                    vals = [float(v["value"][1]) for v in res["data"]["result"]]
                    return res["status"] == "success" and any(v == v for v in vals)  # a non-NaN sample

                deadline = time.time() + 90
                missing = queries
                while missing and time.time() < deadline:
                    time.sleep(2)
                    missing = [(t, e) for t, e in missing if not has_data(e)]
                self.assertEqual(missing, [], "dashboard queries without data")
                with urllib.request.urlopen(api + "/targets", timeout=10) as r:
                    targets = json.load(r)["data"]["activeTargets"]
                self.assertEqual([t["health"] for t in targets], ["up"])
                with urllib.request.urlopen(api + "/rules", timeout=10) as r:
                    rules = [rule for g in json.load(r)["data"]["groups"] for rule in g["rules"]]
                self.assertEqual(len(rules), 5)
                self.assertTrue(all(rule["health"] == "ok" for rule in rules), rules)
            finally:
                stop.set()
                worker.join()
                prom.terminate()
                prom.wait(30)


if __name__ == "__main__":
    unittest.main(verbosity=2)
