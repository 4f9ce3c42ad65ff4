#!/usr/bin/python3
"""`Upgrade: h2c` behind a real HAProxy (mode http) that denies a path: with csgi's defaults the upgrade
is ignored, so every request on the connection passes HAProxy's rules; with --h2c-upgrade the bypass the
option's documentation warns of is there (the HTTP/2 stream after the 101 reaches the denied path).
Skipped (exit 0 with a note) when haproxy is missing.
Usage: test_h2c_haproxy.py CSGI_EXE"""
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import h2.config
import h2.connection
import h2.events

CSGI = sys.argv[1]
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serving import check, failures, free_port, start, wait_port  # noqa: E402

CONFIG = """
global
    maxconn 100
defaults
    mode http
    timeout connect 2s
    timeout client 10s
    timeout server 10s
    timeout tunnel 10s
frontend web
    bind 127.0.0.1:{front}
    http-request deny if {{ path_beg /env }}
    default_backend csgi
backend csgi
    server csgi 127.0.0.1:{csgi}
"""


def read_head(s, buf=b""):
    """Reads until the end of a response head; returns (head, bytes after it)."""
    deadline = time.time() + 5
    while b"\r\n\r\n" not in buf and time.time() < deadline:
        d = s.recv(65536)
        if not d:
            break
        buf += d
    head, _, rest = buf.partition(b"\r\n\r\n")
    return head, rest


def read_response(s, buf=b""):
    """One HTTP/1.1 response with a Content-Length body: (status, body, bytes after it)."""
    head, rest = read_head(s, buf)
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    deadline = time.time() + 5
    while len(rest) < length and time.time() < deadline:
        d = s.recv(65536)
        if not d:
            break
        rest += d
    status = int(head.split()[1]) if head.startswith(b"HTTP/1.1 ") else None
    return status, rest[:length], rest[length:]


def smuggle(front):
    """An Upgrade: h2c request for /hello, then (after a 101) an HTTP/2 stream for /env. Returns (the first
    response head, the status /env got: over HTTP/2 after a 101, else as the next HTTP/1.1 request)."""
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding=None))
    settings = conn.initiate_upgrade_connection()
    s = socket.create_connection(("127.0.0.1", front), timeout=5)
    s.sendall(b"GET /hello HTTP/1.1\r\nHost: t\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\n"
              b"HTTP2-Settings: " + settings + b"\r\n\r\n")
    head, rest = read_head(s)
    if not head.startswith(b"HTTP/1.1 101"):
        _, _, rest = read_response(s, head + b"\r\n\r\n" + rest)
        s.sendall(b"GET /env HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        status, _, _ = read_response(s, rest)
        s.close()
        return head, status
    conn.send_headers(3, [(":method", "GET"), (":scheme", "http"), (":path", "/env"), (":authority", "t")],
                      end_stream=True)
    s.sendall(conn.data_to_send())
    status, data = None, rest
    deadline = time.time() + 5
    while status is None and time.time() < deadline:
        for e in conn.receive_data(data):
            if isinstance(e, h2.events.ResponseReceived) and e.stream_id == 3:
                status = int(dict(e.headers)[b":status"])
        s.sendall(conn.data_to_send())
        if status is None:
            data = s.recv(65536)
            if not data:
                break
    s.close()
    return head, status


def main():
    if not shutil.which("haproxy"):
        print("skip: haproxy is not installed")
        return 0
    for args, upgrade in (([], False), (["--h2c-upgrade"], True)):
        label = "--h2c-upgrade: " if upgrade else "default: "
        with tempfile.TemporaryDirectory() as tmp:
            csgi, csgi_port = start(CSGI, ["--demo"] + args)
            front = free_port()
            cfg = os.path.join(tmp, "haproxy.cfg")
            with open(cfg, "w") as f:
                f.write(CONFIG.format(front=front, csgi=csgi_port))
            hap = subprocess.Popen(["haproxy", "-db", "-f", cfg], stdout=subprocess.DEVNULL,
                                   stderr=open(os.path.join(tmp, "haproxy.log"), "w"))
            try:
                check(wait_port(front), label + "haproxy listens")
                s = socket.create_connection(("127.0.0.1", front), timeout=5)
                s.sendall(b"GET /env HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
                check(read_response(s)[0] == 403, label + "GET /env is denied by HAProxy (403)")
                s.close()
                head, status = smuggle(front)
                if upgrade:
                    check(head.startswith(b"HTTP/1.1 101") and status == 200,
                          label + "the option turns the upgrade on: an HTTP/2 stream after the 101 reaches the "
                          "denied /env (%r, %s), the risk docs/standalone.md names" % (head[:20], status))
                else:
                    check(head.startswith(b"HTTP/1.1 200") and status == 403,
                          label + "Upgrade: h2c is ignored (%r) and the next request for /env is denied (%s)"
                          % (head[:20], status))
            finally:
                hap.terminate()
                hap.wait(timeout=10)
                csgi.terminate()
                csgi.wait(timeout=15)
    print("%d failed" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
