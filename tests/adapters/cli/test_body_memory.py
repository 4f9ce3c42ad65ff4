#!/usr/bin/python3
"""`csgi serve` keeps the memory of request bodies for the next ones: 200 rounds of 100 KB POSTs on four
keep-alive connections at once cost the server almost no page faults (glibc would otherwise return each freed body buffer to
the kernel and fault it in again, zeroed: ~35 minor faults per request). Counted from /proc/PID/stat.
Usage: test_body_memory.py CSGI_EXE"""
import os
import re
import socket
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serving import check, failures, start  # noqa: E402

CSGI = sys.argv[1]


def minor_faults(pid):
    with open("/proc/%d/stat" % pid) as f:
        return int(f.read().rsplit(")", 1)[1].split()[7])


def send(sock, body):
    sock.sendall(b"POST /hello HTTP/1.1\r\nHost: t\r\nContent-Type: application/octet-stream\r\n"
                 b"Content-Length: %d\r\n\r\n" % len(body) + body)


def answer(sock):
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            return None
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    length = int(re.search(rb"(?i)content-length: *(\d+)", head).group(1))
    while len(rest) < length:
        chunk = sock.recv(65536)
        if not chunk:
            return None
        rest += chunk
    return head.split(b" ")[1]


def rounds(socks, body, n):
    """`n` rounds: a body sent on every connection, then every answer read (the bodies overlap)."""
    statuses = []
    for _ in range(n):
        for s in socks:
            send(s, body)
        statuses += [answer(s) for s in socks]
    return statuses


body = os.urandom(100 * 1024)
p, port = start(CSGI, ["--demo", "--threads", "1"])
try:
    socks = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(4)]
    statuses = rounds(socks, body, 10)  # warm-up: the buffers' first use
    before = minor_faults(p.pid)
    statuses += rounds(socks, body, 50)
    per_request = (minor_faults(p.pid) - before) / 200
    for s in socks:
        s.close()
    check(all(st == b"200" for st in statuses), "240 uploads of 100 KB answered 200")
    check(per_request < 5, "the server's minor page faults per 100 KB upload: %.2f (under 5)" % per_request)
finally:
    p.terminate()
    p.wait(timeout=15)
print("%d failure(s)" % len(failures))
sys.exit(1 if failures else 0)
