"""Starts the real `flywheel serve` on loopback for the server tests, and small raw-HTTP helpers.

Environment (set by CTest): FW_FLYWHEEL (the binary), FW_SOURCE_DIR (the repository root, the
current directory of the server so that conf/default.toml's relative paths resolve).
"""
import json
import os
import re
import signal
import socket
import subprocess
import tempfile
import threading
import time

FLYWHEEL = os.environ.get("FW_FLYWHEEL", "build/tools/flywheel")
SOURCE_DIR = os.environ.get("FW_SOURCE_DIR", ".")
MODEL_ID = "SmolLM2-135M-Instruct.Q4_1"


class Server:
    """`flywheel serve --config conf/default.toml --port 0` plus extra flags or config text."""

    def __init__(self, *flags, config_extra="", startup_s=120, env=None):
        self.config_path = default_config_with(config_extra)
        config = self.config_path or os.path.join(SOURCE_DIR, "conf/default.toml")
        cmd = [FLYWHEEL, "serve", "--config", config, "--port", "0", *flags]
        self.proc = subprocess.Popen(cmd, cwd=SOURCE_DIR, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     text=True, env={**os.environ, **(env or {})})
        self.stderr_lines = []
        self.port = None
        ready = threading.Event()

        def pump():
            for line in self.proc.stderr:
                self.stderr_lines.append(line)
                m = re.search(r"listening on https?://[^:]+:(\d+)", line)
                if m:
                    self.port = int(m.group(1))
                    ready.set()
            ready.set()

        self.pump = threading.Thread(target=pump, daemon=True)
        self.pump.start()
        ready.wait(startup_s)
        if self.port is None:
            self.stop()
            raise RuntimeError("flywheel serve did not start:\n" + "".join(self.stderr_lines))
        self.base = f"{'https' if any('listening on https://' in l for l in self.stderr_lines) else 'http'}://127.0.0.1:{self.port}"

    def stop(self, sig=signal.SIGTERM, timeout=60):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.pump.join(10)
        if self.proc.stderr and not self.pump.is_alive():
            self.proc.stderr.close()
        if self.config_path:
            os.unlink(self.config_path)
            self.config_path = None
        return self.proc.returncode

    def rss_kib(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def default_config_with(extra):
    """A temporary copy of conf/default.toml with `extra` merged in (its path, for the caller to
    remove), or None when there is nothing to merge."""
    if not extra:
        return None
    with open(os.path.join(SOURCE_DIR, "conf/default.toml")) as f:
        text = f.read()
    fd, path = tempfile.mkstemp(suffix=".toml")
    with os.fdopen(fd, "w") as f:
        f.write(merge_toml(text, extra))
    return path


def merge_toml(base, extra):
    """base with extra's [section] key = value lines replacing or joining base's."""
    sections = {}
    current = None
    for line in extra.splitlines():
        line = line.strip()
        if not line:
            continue
        if line.startswith("["):
            current = line
            sections.setdefault(current, [])
        else:
            sections[current].append(line)
    out = []
    current = None
    pending = dict(sections)
    for line in base.splitlines():
        stripped = line.strip()
        if stripped.startswith("[") and not stripped.startswith("[["):
            if current in pending:
                out.extend(pending.pop(current))
            current = stripped
        if current in sections and "=" in stripped and not stripped.startswith("#"):
            key = stripped.split("=")[0].strip()
            if any(l.split("=")[0].strip() == key for l in sections[current]):
                continue
        out.append(line)
    if current in pending:
        out.extend(pending.pop(current))
    # Sections the base lacks go before its [[devices]] tables (a [table] after them would nest).
    tail = []
    for sec, lines in pending.items():
        tail += [sec] + lines
    if tail:
        idx = next((i for i, l in enumerate(out) if l.strip().startswith("[[devices]]")), len(out))
        out[idx:idx] = tail
    return "\n".join(out) + "\n"


def raw(port, data, timeout=30.0, read_all=True):
    """Sends bytes, returns (status, headers dict, body bytes) of the first response; status 0 if
    the server closed without answering."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        if data:
            s.sendall(data)
        buf = b""
        while b"\r\n\r\n" not in buf:
            chunk = s.recv(65536)
            if not chunk:
                return 0, {}, buf
            buf += chunk
        head, _, body = buf.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        headers = {}
        for l in lines[1:]:
            k, _, v = l.partition(":")
            headers[k.strip().lower()] = v.strip()
        n = int(headers.get("content-length", "-1"))
        while read_all and n >= 0 and len(body) < n:
            chunk = s.recv(65536)
            if not chunk:
                break
            body += chunk
        return status, headers, body
    finally:
        s.close()


def post(port, path, obj_or_bytes, headers=None, timeout=60.0):
    body = obj_or_bytes if isinstance(obj_or_bytes, bytes) else json.dumps(obj_or_bytes).encode()
    h = {"Content-Type": "application/json", **(headers or {})}
    head = f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\nConnection: close\r\n"
    head += "".join(f"{k}: {v}\r\n" for k, v in h.items()) + "\r\n"
    return raw(port, head.encode() + body, timeout)


def get(port, path, headers=None, timeout=30.0):
    head = f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
    head += "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items()) + "\r\n"
    return raw(port, head.encode(), timeout)


def metrics(port):
    """{series text (name{labels}): value} of /metrics."""
    status, _, body = get(port, "/metrics")
    assert status == 200, status
    out = {}
    for line in body.decode().splitlines():
        if not line or line.startswith("#"):
            continue
        name, _, value = line.rpartition(" ")
        out[name] = float(value)
    return out


def metric(port, prefix):
    """The sum of the series whose name (without labels) is prefix."""
    return sum(v for k, v in metrics(port).items() if k.split("{")[0] == prefix)


def wait_until(pred, timeout=30.0, step=0.1):
    end = time.time() + timeout
    while time.time() < end:
        if pred():
            return True
        time.sleep(step)
    return pred()


class PrefillNode:
    """`flywheel serve --role prefill --listen 127.0.0.1:PORT` (port 0: any free one): a process
    that only prefills for decode nodes; `port` is the CAF port it published."""

    def __init__(self, port=0, config=None, startup_s=120, env=None, config_extra=""):
        self.config_path = None if config else default_config_with(config_extra)
        config = config or self.config_path or os.path.join(SOURCE_DIR, "conf/default.toml")
        cmd = [FLYWHEEL, "serve", "--config", config, "--role", "prefill", "--listen", f"127.0.0.1:{port}"]
        self.proc = subprocess.Popen(cmd, cwd=SOURCE_DIR, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                     env={**os.environ, **(env or {})})
        self.stderr_lines = []
        self.port = None
        ready = threading.Event()

        def pump():
            for line in self.proc.stderr:
                self.stderr_lines.append(line)
                m = re.search(r"prefill node listening on [^:]+:(\d+)", line)
                if m:
                    self.port = int(m.group(1))
                    ready.set()
            ready.set()

        self.pump = threading.Thread(target=pump, daemon=True)
        self.pump.start()
        ready.wait(startup_s)
        if self.port is None:
            self.stop()
            raise RuntimeError("the prefill node did not start:\n" + "".join(self.stderr_lines))
        self.address = f"127.0.0.1:{self.port}"

    def log(self):
        return "".join(self.stderr_lines)

    def stop(self, sig=signal.SIGTERM, timeout=60):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.pump.join(10)
        if self.proc.stderr and not self.pump.is_alive():
            self.proc.stderr.close()
        if self.config_path:
            os.unlink(self.config_path)
            self.config_path = None
        return self.proc.returncode

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def is_json_object_prefix(text):
    """Whether `text` is the start of some JSON object text (an answer cut by max_tokens in JSON
    mode must be one); a whole object is one too."""
    class End(Exception):
        pass

    s, i = text, [0]

    def peek():
        if i[0] >= len(s):
            raise End
        return s[i[0]]

    def ws():
        while i[0] < len(s) and s[i[0]] in " \t\n\r":
            i[0] += 1

    def expect(ch):
        if peek() != ch:
            raise ValueError(f"expected {ch!r} at {i[0]}")
        i[0] += 1

    def string():
        expect('"')
        while True:
            c = peek()
            i[0] += 1
            if c == '"':
                return
            if c == "\\":
                e = peek()
                i[0] += 1
                if e == "u":
                    for _ in range(4):
                        if peek() not in "0123456789abcdefABCDEF":
                            raise ValueError("bad \\u escape")
                        i[0] += 1
                elif e not in '"\\/bfnrt':
                    raise ValueError("bad escape")
            elif ord(c) < 0x20:
                raise ValueError("control character in a string")

    def number():
        m = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?").match(s, i[0])
        partial = re.compile(r"-?((0|[1-9][0-9]*)(\.[0-9]*)?([eE][+-]?[0-9]*)?)?$").match(s, i[0])
        if partial and partial.end() == len(s):
            raise End  # a number still being written
        if not m or m.end() == i[0]:
            raise ValueError(f"bad number at {i[0]}")
        i[0] = m.end()

    def value():
        ws()
        c = peek()
        if c == "{":
            obj()
        elif c == "[":
            i[0] += 1
            ws()
            if peek() == "]":
                i[0] += 1
                return
            while True:
                value()
                ws()
                if peek() == "]":
                    i[0] += 1
                    return
                expect(",")
        elif c == '"':
            string()
        elif c in "-0123456789":
            number()
        else:
            for word in ("true", "false", "null"):
                rest = s[i[0]:i[0] + len(word)]
                if word.startswith(rest) and rest and rest[0] == word[0]:
                    if len(rest) < len(word):
                        raise End
                    i[0] += len(word)
                    return
            raise ValueError(f"unexpected {c!r} at {i[0]}")

    def obj():
        expect("{")
        ws()
        if peek() == "}":
            i[0] += 1
            return
        while True:
            ws()
            string()
            ws()
            expect(":")
            value()
            ws()
            if peek() == "}":
                i[0] += 1
                return
            expect(",")

    try:
        ws()
        obj()
        ws()
        return i[0] == len(s)
    except End:
        return True
    except ValueError:
        return False
