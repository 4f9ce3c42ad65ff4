"""What the chat example's tests share: a redis-server from a temporary config, `csgi serve` hosts of
examples/chat on free ports (of 127.0.0.1, or of a network namespace's address), plain HTTP requests, an SSE
client, and check(). An endpoint is a port of 127.0.0.1 or an (address, port) pair."""
import http.client
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from ports import free_port, stop_group as stop, wait_port  # noqa: E402,F401
from redis_server import start_redis  # noqa: E402,F401

ORIGIN = "http://chat.example"
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)


def endpoint(ep):
    """(address, port) of an endpoint."""
    return ep if isinstance(ep, tuple) else ("127.0.0.1", ep)


def serve(csgi, chat, redis, addr="127.0.0.1", netns=None, password=None):
    """`csgi serve --workers 2` of the chat on the Redis at endpoint `redis` (with `password`), listening on
    `addr` (in network namespace `netns`): (process, port)."""
    # --graceful-timeout 1: an SSE stream whose client left is noticed at its next write (a message or the
    # heartbeat, 15 s); a stop waits for such streams at most that long.
    argv = [csgi, "serve", "--listen", addr + ":0", "--workers", "2", "--graceful-timeout", "1", "--app", chat,
            "--app-arg", "redis://%s%s:%d" % (((":%s@" % password) if password else "",) + endpoint(redis)),
            "--app-arg", "cors=" + ORIGIN]
    p = subprocess.Popen((["ip", "netns", "exec", netns] if netns else []) + argv,
                         stdout=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.time() + 15
    while time.time() < deadline:
        line = p.stdout.readline()
        m = re.search(r"listening on http://%s:(\d+)/" % re.escape(addr), line or "")
        if m:
            return p, int(m.group(1))
        if not line:
            break
    stop(p)
    raise SystemExit("csgi serve did not start")


def request(ep, method, path, body=None, headers=None):
    """(status, headers, body) of one request on a connection of its own."""
    c = http.client.HTTPConnection(*endpoint(ep), timeout=10)
    try:
        c.request(method, path, body=body, headers=headers or {})
        r = c.getresponse()
        return r.status, r.headers, r.read()
    finally:
        c.close()


class Sse:
    """An SSE client: event() reads one event (its fields; data lines joined), each read bounded by `timeout`
    seconds (OSError past it)."""

    def __init__(self, ep, path, headers=None, timeout=10):
        self.conn = http.client.HTTPConnection(*endpoint(ep), timeout=timeout)
        self.conn.request("GET", path, headers=headers or {})
        self.res = self.conn.getresponse()

    def event(self):
        fields = {}
        for _ in range(100):
            line = self.res.readline().decode().rstrip("\n")
            if line == "":
                return fields
            if line.startswith(":"):
                continue
            name, _, value = line.partition(": ")
            fields[name] = fields[name] + "\n" + value if name in fields else value
        raise AssertionError("no end of an SSE event")

    def close(self):
        self.conn.close()
