"""What the cli socket tests share: a pass/fail checklist and `csgi serve` started on a free port."""
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from ports import free_port, wait_port  # noqa: E402,F401

failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def start(csgi, args, listen="127.0.0.1:0", stderr=subprocess.DEVNULL):
    """Starts `csgi serve ARGS --listen LISTEN`; returns (process, port) once it listens (http or https)."""
    p = subprocess.Popen([csgi, "serve"] + args + ["--listen", listen], stdout=subprocess.PIPE,
                         stderr=stderr, text=True)
    deadline = time.time() + 10
    while time.time() < deadline:
        line = p.stdout.readline()
        m = re.search(r"listening on https?://127\.0\.0\.1:(\d+)/", line)
        if m:
            return p, int(m.group(1))
    p.kill()
    raise RuntimeError("csgi did not start")


def exchange(sock, path, host="t", close=False, extra=""):
    """One GET on an open (plain or TLS) socket; returns (status, head text, body text) once the body of
    its Content-Length has arrived."""
    sock.sendall(("GET %s HTTP/1.1\r\nHost: %s\r\n%s%s\r\n" % (path, host, extra, "Connection: close\r\n" if close else "")).encode())
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    m = re.search(rb"(?i)content-length: *(\d+)", head)
    n = int(m.group(1)) if m else 0
    while len(body) < n:
        chunk = sock.recv(65536)
        if not chunk:
            break
        body += chunk
    return int(head.split()[1]), head.decode(), body.decode("utf-8", "replace")
