#!/usr/bin/python3
"""Memory of WebSockets over HTTP/2 (RFC 8441) holding unfinished messages: one h2c connection opens
STREAMS extended-CONNECT WebSockets on /echo of the WebSocket test app, and each sends HELD MiB of a
16 MiB binary message, never finished. Prints the server's resident memory before, after, and its peak
(VmHWM), and how many streams the server closed (and with which codes). Extra arguments go to `csgi serve`.
Usage: h2_websocket_memory.py CSGI_EXE WEBSOCKET_APP_SO [STREAMS] [HELD_MIB] [csgi serve options...]
  e.g. h2_websocket_memory.py build/adapters/cli/csgi build/tests/adapters/standalone/libstandalone_websocket_app.so 60 15"""
import collections
import os
import re
import socket
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "adapters", "standalone"))
import h2.exceptions  # noqa: E402
from h2_ws_client import BINARY, Conn, frame  # noqa: E402

CSGI, APP = sys.argv[1], sys.argv[2]
STREAMS = int(sys.argv[3]) if len(sys.argv) > 3 else 60
HELD = int(sys.argv[4]) if len(sys.argv) > 4 else 15
EXTRA = sys.argv[5:]


def mem(pid, key):
    with open("/proc/%d/status" % pid) as f:
        return int(re.search(key + r":\s+(\d+)", f.read()).group(1)) / 1024


p = subprocess.Popen([CSGI, "serve", "--app", APP, "--listen", "127.0.0.1:0", "--h2-max-streams", str(STREAMS + 10)]
                     + EXTRA, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
port = int(re.search(r":(\d+)/", p.stdout.readline()).group(1))
try:
    c = Conn(port)
    c.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    before = mem(p.pid, "VmRSS")
    body = frame(BINARY, b"z" * (16 << 20))[:HELD << 20]
    t0 = time.time()
    for _ in range(STREAMS):
        sid = c.open("/echo")
        try:
            c.send(sid, body)
        except (h2.exceptions.StreamClosedError, h2.exceptions.ProtocolError):
            pass
    c.wait(lambda: False, 1)
    after, peak = mem(p.pid, "VmRSS"), mem(p.pid, "VmHWM")
    codes = collections.Counter(struct.unpack("!H", st["data"][2:4])[0] if st["data"][:1] == b"\x88" else "open"
                                for st in c.streams.values())
    print("%d streams x %d MiB unfinished on one h2c connection (%s): RSS %.0f MiB -> %.0f MiB, peak %.0f MiB; "
          "streams: %s; %.1f s" % (STREAMS, HELD, " ".join(EXTRA) or "default options", before, after, peak,
                                   dict(codes), time.time() - t0))
    c.close()
finally:
    p.terminate()
    p.wait(10)
