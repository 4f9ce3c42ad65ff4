#!/usr/bin/python3
"""WebSocket over HTTP/2 (RFC 8441) under `csgi serve`, on real sockets: python3-h2 opens an extended
CONNECT (`:protocol websocket`) once the server's SETTINGS allow it, and RFC 6455 frames made here go in
the stream's DATA frames both ways. The app is websocket_app.cpp, the one the HTTP/1.1 conformance test
serves, unchanged.

  * the server's SETTINGS carry ENABLE_CONNECT_PROTOCOL 1 (none with --no-h2-websocket);
  * the CONNECT is answered 200 (no Sec-WebSocket-Accept), then: text and binary echo, a fragmented
    message, ping/pong, a client close (answered with its code, on_close sees the code and reason), an
    unmasked frame (1002), a server close with an
    app's code, 1009 above the handler's limit, 1007 on invalid UTF-8, a 1 MiB message through 64 KiB
    windows (the window comes back as the session reads);
  * a slow reader: the server never sends past the client's window, and its RSS stays bounded while a
    flood of messages waits for it; a slow handler: the client is held at the stream's window;
  * a graceful stop closes an open WebSocket with 1001;
  * other streams of the connection are served while the WebSocket is open;
  * a path whose app does not take the WebSocket answers normally on the stream; another `:protocol`
    is 501; the access log has the request as `GET ... HTTP/2` with status 200 (EXT-11);
  * the same over TLS (h2 by ALPN) and with the app on a pool (--app-threads 4).
Usage: test_h2_websocket.py CSGI_EXE WEBSOCKET_APP_SO"""
import os
import re
import shutil
import signal
import socket
import ssl
import struct
import subprocess
import sys
import tempfile
import time

import h2.exceptions
import h2.settings
from hyperframe.frame import DataFrame

CSGI, APP = sys.argv[1], sys.argv[2]
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tls_certs import Certs  # noqa: E402
import served  # noqa: E402
from served import check, failures  # noqa: E402
from h2_ws_client import BINARY, CLOSE, CONT, PING, PONG, TEXT, Conn, close_payload, frame  # noqa: E402

class Server(served.Server):
    def __init__(self, args, listen="127.0.0.1:0"):
        super().__init__([CSGI, "serve", "--app", APP] + args, listen)


def ws_checks(srv, tls=None, label=""):
    c = Conn(srv.port, tls)
    check(c.server_settings.get(h2.settings.SettingCodes.ENABLE_CONNECT_PROTOCOL) == 1,
          label + "SETTINGS_ENABLE_CONNECT_PROTOCOL 1 (%r)" % c.server_settings)
    sid = c.open("/echo")
    st = c.streams[sid]
    check(st["status"] == 200 and b"sec-websocket-accept" not in st["headers"] and not st["ended"],
          label + "extended CONNECT answered 200, the stream open (%r)" % st["headers"])
    c.send(sid, frame(TEXT, "héllo".encode()))
    check(c.message(sid) == (True, TEXT, "héllo".encode()), label + "text echoed")
    c.send(sid, frame(BINARY, bytes(range(256))))
    check(c.message(sid) == (True, BINARY, bytes(range(256))), label + "binary echoed")
    c.send(sid, frame(TEXT, b"one ", fin=False) + frame(CONT, b"two ", fin=False) + frame(PING, b"mid") +
           frame(CONT, b"three"))
    check(c.message(sid) == (True, PONG, b"mid"), label + "a ping between fragments answered with its payload")
    check(c.message(sid) == (True, TEXT, b"one two three"), label + "a fragmented message reassembled and echoed")
    other = c.get("/hello")
    check(other["status"] == 200 and other["data"] == b"hello",
          label + "another stream of the connection served while the WebSocket is open")
    big = os.urandom(1 << 20)
    c.send(sid, frame(BINARY, big))
    m = c.message(sid, 30)
    check(m == (True, BINARY, big), label + "1 MiB each way through 64 KiB stream windows (%s)" %
          (len(m[2]) if m else None))
    c.send(sid, frame(CLOSE, close_payload(1000, b"bye")))
    m = c.message(sid)
    check(m and m[:2] == (True, CLOSE) and m[2][:2] == struct.pack("!H", 1000),
          label + "the client's close answered with its code (%r)" % (m,))
    if c.streams[sid]["reset"] is None and not c.h2.streams[sid].closed:
        c.send(sid, b"", end=True)
    check(c.wait(lambda: c.streams[sid]["ended"] or c.streams[sid]["reset"] is not None),
          label + "the stream ends after the closing handshake (END_STREAM %s, reset %s)" %
          (c.streams[sid]["ended"], c.streams[sid]["reset"]))
    time.sleep(0.2)
    events = c.get("/events")["data"].decode()
    check("close 1000 bye" in events, label + "on_close saw 1000 bye (%r)" % events[-80:])

    sid = c.open("/close")
    c.send(sid, frame(TEXT, b"4001 custom"))
    check(c.message(sid) == (True, CLOSE, close_payload(4001, b"custom")), label + "the app closes with 4001 custom")
    c.send(sid, frame(CLOSE, close_payload(4001)), end=True)

    sid = c.open("/small")
    c.send(sid, frame(BINARY, b"x" * 2000))
    m = c.message(sid)
    check(m and m[1] == CLOSE and m[2][:2] == struct.pack("!H", 1009), label + "above the handler's limit: 1009 (%r)" % (m,))
    sid = c.open("/echo")
    c.send(sid, frame(TEXT, b"\xff\xfe"))
    m = c.message(sid)
    check(m and m[1] == CLOSE and m[2][:2] == struct.pack("!H", 1007), label + "invalid UTF-8: 1007 (%r)" % (m,))
    sid = c.open("/echo")
    c.send(sid, bytes([0x81, 8]) + b"unmasked")  # a frame without the mask bit
    m = c.message(sid)
    check(m and m[1] == CLOSE and m[2][:2] == struct.pack("!H", 1002), label + "an unmasked frame: 1002 (%r)" % (m,))

    sid = c.open("/hello")
    c.wait(lambda: c.streams[sid]["ended"] or c.streams[sid]["reset"] is not None)
    check(c.streams[sid]["status"] == 200 and c.streams[sid]["data"] == b"hello",
          label + "an app that does not take the WebSocket answers on the stream (%r)" % c.streams[sid]["status"])
    sid = c.open("/echo", protocol="chat")
    check(c.streams[sid]["status"] == 501, label + "another :protocol: 501 (%r)" % c.streams[sid]["status"])
    check(c.get("/hello")["data"] == b"hello", label + "the connection serves on")
    c.close()


def slow_reader(srv, tls=None, label=""):
    """The client gives no window back: the server stops at the window; its memory stays bounded."""
    c = Conn(srv.port, tls, window=65535, auto_ack=False)
    sid = c.open("/flood")
    rss0 = srv.rss_mb()
    c.send(sid, frame(TEXT, b"64"))  # 64 messages of 64 KiB
    deadline = time.time() + 2
    while time.time() < deadline:
        c.pump(0.2)
    st = c.streams[sid]
    rss1 = srv.rss_mb()
    check(st["received"] <= 65535, label + "a slow reader: the server stopped at the window (%d bytes)" % st["received"])
    check(rss1 - rss0 < 32, label + "a slow reader: server RSS %.1f -> %.1f MB" % (rss0, rss1))
    c.h2.acknowledge_received_data(st["unacked"], sid)
    st["unacked"] = 0
    c.auto_ack = True
    c.flush()
    total = 0
    while True:
        m = c.message(sid, 10)
        if not m or m[1] != BINARY:
            break
        total += len(m[2])
        if total >= 64 * 65536:
            break
    check(total > 0, label + "once the window opens the messages come (%d bytes)" % total)
    c.close()


def slow_handler(srv, tls=None, label=""):
    """A handler that takes 200 ms a message: the server gives the stream's window back only as its
    session reads, so a client that sends 16 messages of 8 KiB at once is held at the window, and all
    are echoed in the end."""
    c = Conn(srv.port, tls)
    sid = c.open("/slow")
    msg = frame(BINARY, b"s" * 8192)
    sent = 0
    while sent < 16 and c.h2.local_flow_control_window(sid) >= len(msg):
        c.h2.send_data(sid, msg)
        sent += 1
    c.flush()
    time.sleep(0.1)
    deadline = time.time() + 0.1
    while time.time() < deadline:
        c.pump(0.05)
    check(sent < 16 and c.h2.local_flow_control_window(sid) < 32768,
          label + "a slow handler: the client is held at the stream's window (%d messages sent, window %d)" %
          (sent, c.h2.local_flow_control_window(sid)))
    rest = b"".join(msg for _ in range(16 - sent))
    ok = c.send(sid, rest)
    echoed = 0
    while ok and echoed < 16:
        m = c.message(sid, 10)
        if not m:
            break
        echoed += m == (True, BINARY, b"s" * 8192)
    check(echoed == 16, label + "a slow handler: all 16 messages echoed in the end (%d)" % echoed)
    c.close()


def graceful_stop(srv, label=""):
    """SIGTERM with a WebSocket open on a stream: GOAWAY, and the WebSocket is closed with 1001; the
    server exits 0 once the client answered (raw bytes: python3-h2 drops a connection's streams on GOAWAY)."""
    c = Conn(srv.port)
    sid = c.open("/echo")
    srv.p.send_signal(signal.SIGTERM)
    data, want = b"", struct.pack("!H", 1001) + b"server shutting down"
    deadline = time.time() + 10
    while want not in data and time.time() < deadline:
        try:
            d = c.s.recv(65536)
        except socket.timeout:
            break
        if not d:
            break
        data += d
    check(want in data, label + "a graceful stop closes the WebSocket with 1001")
    c.s.sendall(DataFrame(sid, data=frame(CLOSE, close_payload(1001)), flags=["END_STREAM"]).serialize())
    try:
        rc = srv.p.wait(15)
    except subprocess.TimeoutExpired:
        srv.p.kill()
        rc = None
    check(rc == 0, label + "the server exits 0 after SIGTERM (%s)" % rc)
    c.close()


def close_code_of(m):
    """The code of a close frame (fin, opcode, payload), or None."""
    return struct.unpack("!H", m[2][:2])[0] if m and m[1] == CLOSE and len(m[2]) >= 2 else None


def send_some(c, sid, data):
    """Sends `data` on `sid`; False when the stream or the connection ended first."""
    try:
        return c.send(sid, data)
    except (h2.exceptions.StreamClosedError, h2.exceptions.ProtocolError, OSError):
        return False


def connection_budget():
    """--ws-connection-buffer-bytes: the streams of one connection share one budget for unfinished
    messages; the stream whose message goes past it is closed with 1009, the others finish theirs, and
    another connection is served."""
    srv = Server(["--ws-connection-buffer-bytes", str(2 << 20), "--ws-max-message-bytes", str(2 << 20)])
    c = Conn(srv.port)
    s1, s2, s3 = c.open("/echo"), c.open("/echo"), c.open("/echo")
    m1, m2 = os.urandom(768 << 10), os.urandom(768 << 10)
    f1, f2, f3 = frame(BINARY, m1), frame(BINARY, m2), frame(BINARY, b"x" * (3 << 19))
    half = 384 << 10
    check(send_some(c, s1, f1[:half]) and send_some(c, s2, f2[:half]), "budget: two streams hold 384 KiB each")
    send_some(c, s3, f3[:5 << 18])  # past 1 MiB its buffer would pass the 2 MiB the three share
    got = c.message(s3)
    check(close_code_of(got) == 1009 and b"connection" in got[2],
          "budget: the stream going past --ws-connection-buffer-bytes is closed with 1009 and a reason (%r)"
          % (got[2][:80] if got else None,))
    check(send_some(c, s1, f1[half:]) and c.message(s1) == (True, BINARY, m1),
          "budget: the first stream's message completes and is echoed")
    check(send_some(c, s2, f2[half:]) and c.message(s2) == (True, BINARY, m2),
          "budget: the second stream's message completes and is echoed")
    other = Conn(srv.port)
    sid = other.open("/echo")
    other.send(sid, frame(TEXT, b"still here"))
    check(other.message(sid) == (True, TEXT, b"still here"), "budget: another connection is served")
    other.close()
    c.close()
    check(srv.stop() == 0, "budget: server exits 0 after SIGTERM")


def process_budget():
    """--ws-process-buffer-bytes: every WebSocket of the process shares one budget; the one whose message
    goes past it is closed with 1013 (try again later) while the others go on."""
    srv = Server(["--ws-process-buffer-bytes", str(1 << 20), "--ws-max-message-bytes", str(2 << 20)])
    a, b = Conn(srv.port), Conn(srv.port)
    sa, sb = a.open("/echo"), b.open("/echo")
    ma = os.urandom(768 << 10)
    fa, fb = frame(BINARY, ma), frame(BINARY, b"y" * (3 << 19))
    half = 384 << 10
    check(send_some(a, sa, fa[:half]), "process budget: one connection holds 384 KiB")
    send_some(b, sb, fb[:768 << 10])
    got = b.message(sb)
    check(close_code_of(got) == 1013, "process budget: the WebSocket going past it is closed with 1013 (%r)"
          % (got[2][:80] if got else None,))
    check(send_some(a, sa, fa[half:]) and a.message(sa) == (True, BINARY, ma),
          "process budget: the other WebSocket's message completes and is echoed")
    a.close()
    b.close()
    check(srv.stop() == 0, "process budget: server exits 0 after SIGTERM")


def many_unfinished(srv):
    """24 streams of one connection each send 1.25 MiB of an unfinished 2 MiB message: with
    --ws-connection-buffer-bytes 4 MiB the server's memory grows by well under the 30 MiB sent (the same at
    the defaults' scale, 32 MiB and 60 x 15 MiB: bench/h2_websocket_memory.py)."""
    c = Conn(srv.port)
    rss0 = srv.rss_mb()
    body = frame(BINARY, b"z" * (2 << 20))[:5 << 18]
    closed = 0
    for _ in range(24):
        sid = c.open("/echo")
        if c.streams[sid]["status"] != 200:
            break
        send_some(c, sid, body)
    c.wait(lambda: False, 1)
    for st in c.streams.values():
        closed += b"\x88" in st["data"][:1]
    rss1 = srv.rss_mb()
    what = "24 streams x 1.25 MiB unfinished: server RSS %.1f -> %.1f MB (%d closed with 1009)" % (rss0, rss1, closed)
    if srv.sanitized:
        print("skip " + what + ": a sanitizer's allocator keeps freed memory, RSS is no measure here")
    else:
        check(rss1 - rss0 < 12, what)
    check(closed >= 16, "24 streams x 1.25 MiB unfinished: the streams past the budget are closed (%d)" % closed)
    c.close()


def main():
    log = tempfile.NamedTemporaryFile(prefix="csgi-h2ws-", suffix=".log", delete=False).name
    srv = Server(["--access-log", log])
    ws_checks(srv)
    slow_reader(srv)
    slow_handler(srv)
    graceful_stop(srv)
    with open(log) as f:
        lines = f.read()
    os.unlink(log)
    check(re.search(r'"GET /echo HTTP/2" 200 ', lines) is not None,
          "the access log has the extended CONNECT as GET ... HTTP/2 200 (EXT-11)")

    srv = Server(["--ws-connection-buffer-bytes", str(4 << 20)])
    many_unfinished(srv)
    check(srv.stop() == 0, "server exits 0 after SIGTERM")
    connection_budget()
    process_budget()

    srv = Server(["--app-threads", "4"])
    ws_checks(srv, label="pool: ")
    slow_handler(srv, label="pool: ")
    graceful_stop(srv, "pool: ")

    srv = Server(["--no-h2-websocket"])
    c = Conn(srv.port)
    check(c.server_settings.get(h2.settings.SettingCodes.ENABLE_CONNECT_PROTOCOL, 0) == 0,
          "--no-h2-websocket: no SETTINGS_ENABLE_CONNECT_PROTOCOL (%r)" % c.server_settings)
    c.close()
    check(srv.stop() == 0, "server exits 0 after SIGTERM")

    certs = Certs()
    try:
        ctx = ssl.create_default_context(cafile=certs.ca)
        ctx.set_alpn_protocols(["h2"])
        srv = Server(["--tls-cert", certs.server[0], "--tls-key", certs.server[1]], listen="https://127.0.0.1:0")
        ws_checks(srv, ctx, "TLS: ")
        slow_reader(srv, ctx, "TLS: ")
        check(srv.stop() == 0, "TLS: server exits 0 after SIGTERM")
    finally:
        shutil.rmtree(certs.dir, ignore_errors=True)

    print("%d failure(s)" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
