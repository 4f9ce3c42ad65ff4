#!/usr/bin/python3
"""`csgi serve` over HTTP/2 (h2c, prior knowledge), on real sockets, with real clients and hostile peers.

  * curl --http2-prior-knowledge and nghttp against --demo, and their Upgrade: h2c (curl --http2,
    nghttp -u; one with a body stays HTTP/1.1); HEAD; 100 concurrent streams on one
    connection with the app on a pool (--app-threads 4), several of them in the app at once;
  * a 1.3 MB file to a client whose window is 4 KiB (flow control respected, digest matches);
  * per-stream refusals (malformed request, body over --max-body-bytes) leave the connection serving;
  * hostile peers, each followed by a check that another client is served at once and that the server's
    CPU time and RSS stayed bounded: rapid reset, CONTINUATION flood, HPACK bomb, SETTINGS, PING and empty
    DATA floods, a zero window held forever (closed by --send-timeout), stream-id exhaustion;
  * trailer fields of a stream and a writer body in a trailing HEADERS frame (python3-h2, nghttp -v), none
    on HEAD, and after a body held back by flow control; over TLS too; an empty body with trailers
    (trailers-only) as HEADERS, then the trailing HEADERS frame that ends the stream, inline and on the pool;
  * a graceful stop sends GOAWAY and finishes the stream in flight;
  * over TLS (certificates made now, tls_certs.py): ALPN chooses h2 (curl --http2 and nghttp over
    https, the env of a TLS stream), http/1.1 for a client that asks for it, h2c refused (RFC 9113 §3.3:
    neither the preface nor Upgrade: h2c on a TLS connection), hostile peers (rapid reset, CONTINUATION
    flood, zero window held forever); --h2-max-streams 0 turns HTTP/2 off, in the clear and over TLS.
Usage: test_h2.py CSGI_EXE CONFORMANCE_APP_SO"""
import hashlib
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
import threading
import time

import h2.config
import h2.connection
import h2.events
import h2.settings
import hpack
from hyperframe.frame import (ContinuationFrame, DataFrame, HeadersFrame, PingFrame, RstStreamFrame,
                              SettingsFrame, WindowUpdateFrame, GoAwayFrame, Frame)

CSGI, APP = sys.argv[1], sys.argv[2]
PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
from tls_certs import Certs  # noqa: E402
import served  # noqa: E402
from served import check, failures  # noqa: E402

# While set (the TLS part of main()), every client socket is wrapped in TLS with this context, which
# offers h2 alone by ALPN.
TLS = None


def tls_context(ca, alpn=("h2",)):
    ctx = ssl.create_default_context(cafile=ca)
    ctx.options |= ssl.OP_IGNORE_UNEXPECTED_EOF
    ctx.set_alpn_protocols(list(alpn))
    return ctx


def connect(port, timeout=5):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    return TLS.wrap_socket(s, server_hostname="localhost") if TLS else s


class Server(served.Server):
    def __init__(self, args, listen="127.0.0.1:0"):
        super().__init__([CSGI, "serve"] + args, listen)


class Client:
    """python3-h2 on a socket."""

    def __init__(self, port, window=None, timeout=10):
        self.s = connect(port, timeout)
        self.h2 = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding=None))
        self.h2.initiate_connection()
        if window is not None:
            self.h2.update_settings({h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: window})
        self.auto_ack = window is None
        self.streams = {}
        self.events = []
        self.flush()

    def flush(self):
        d = self.h2.data_to_send()
        if d:
            self.s.sendall(d)

    def request(self, path, method="GET", headers=(), body=b"", port=None):
        sid = self.h2.get_next_available_stream_id()
        hs = [(":method", method), (":path", path), (":scheme", "https" if TLS else "http"),
              (":authority", "127.0.0.1")] + list(headers)
        self.streams[sid] = {"status": None, "headers": {}, "body": b"", "ended": False, "reset": None, "interim": []}
        self.h2.send_headers(sid, hs, end_stream=not body)
        self.flush()
        while body:  # within the stream's and the connection's windows
            room = min(self.h2.local_flow_control_window(sid), self.h2.max_outbound_frame_size, len(body))
            if room <= 0:
                if not self.pump() or self.streams[sid]["reset"] is not None or self.streams[sid]["ended"]:
                    return sid
                continue
            self.h2.send_data(sid, body[:room], end_stream=room == len(body))
            body = body[room:]
            self.flush()
        return sid

    def pump(self):
        try:
            d = self.s.recv(65536)
        except (ConnectionResetError, socket.timeout):
            d = b""
        if not d:
            return False
        for e in self.h2.receive_data(d):
            self.events.append(e)
            st = self.streams.get(getattr(e, "stream_id", None))
            if isinstance(e, h2.events.ResponseReceived) and st:
                st["headers"] = dict(e.headers)
                st["status"] = int(st["headers"][b":status"])
            elif isinstance(e, h2.events.InformationalResponseReceived) and st:
                st["interim"].append(dict(e.headers))
            elif isinstance(e, h2.events.TrailersReceived) and st:
                st["trailers"] = dict(e.headers)
            elif isinstance(e, h2.events.DataReceived):
                if st:
                    st["body"] += e.data
                if self.auto_ack:
                    self.h2.acknowledge_received_data(e.flow_controlled_length, e.stream_id)
                else:
                    st["unacked"] = st.get("unacked", 0) + e.flow_controlled_length
            elif isinstance(e, h2.events.StreamEnded) and st:
                st["ended"] = True
            elif isinstance(e, h2.events.StreamReset) and st:
                st["reset"] = e.error_code
        self.flush()
        return True

    def wait(self, sids, limit=20):
        deadline = time.time() + limit
        while any(not self.streams[s]["ended"] and self.streams[s]["reset"] is None for s in sids):
            if time.time() > deadline or not self.pump():
                return False
        return True

    def read_windowed(self, sid, window=4096, limit=30):
        """Reads stream `sid` to its end, giving back at most `window` bytes of flow-control credit at a
        time; True when the server never sent more than the window allowed."""
        deadline = time.time() + limit
        within = True
        while not self.streams[sid]["ended"] and self.streams[sid]["reset"] is None and time.time() < deadline:
            if not self.pump():
                break
            st = self.streams[sid]
            if st.get("unacked", 0) > window:
                within = False
            if st.get("unacked", 0) >= window:
                self.h2.acknowledge_received_data(st["unacked"], sid)
                st["unacked"] = 0
                self.flush()
        return within

    def close(self):
        self.s.close()


def get(port, path):
    """One request on a fresh connection: (status, body) or (None, b'') when it failed."""
    try:
        c = Client(port, timeout=5)
        sid = c.request(path)
        c.wait([sid], 5)
        st = c.streams[sid]
        c.close()
        return st["status"], st["body"]
    except OSError:
        return None, b""


def raw(port):
    s = connect(port)
    s.sendall(PREFACE + SettingsFrame(0).serialize())
    return s


def drain_until_closed(s, limit):
    """Reads until the server closes (True) or `limit` seconds pass (False); returns (closed, bytes)."""
    got = b""
    deadline = time.time() + limit
    s.settimeout(0.5)
    while time.time() < deadline:
        try:
            d = s.recv(65536)
        except socket.timeout:
            continue
        except (ConnectionResetError, ssl.SSLError):
            return True, got
        if not d:
            return True, got
        got += d
    return False, got


def goaway_code(data):
    """The error code of the first GOAWAY among raw frames, or None."""
    i = 0
    while i + 9 <= len(data):
        length = int.from_bytes(data[i:i + 3], "big")
        if data[i + 3] == 0x7 and i + 9 + 8 <= len(data):
            return struct.unpack(">I", data[i + 13:i + 17])[0]
        i += 9 + length
    return None


def headers_block(enc, path="/", extra=()):
    return enc.encode([(":method", "GET"), (":path", path), (":scheme", "http"), (":authority", "x")] + list(extra))


def hostile(srv, name, attack, probe=("/hello", b"Hello, world!"), cpu_limit=5.0, rss_limit_mb=64, time_limit=20):
    """Runs `attack(port)`, then checks that another client is served, and the server's cost."""
    cpu0, rss0, t0 = srv.cpu(), srv.rss_mb(), time.time()
    result = attack(srv.port)
    elapsed = time.time() - t0
    status, body = get(srv.port, probe[0])
    cpu = srv.cpu() - cpu0
    rss = srv.rss_mb() - rss0
    check(result is not False, "%s: the server defends itself (%s)" % (name, result))
    check(status == 200 and body == probe[1], "%s: another client is served afterwards" % name)
    check(elapsed < time_limit, "%s: over in %.1f s (< %d)" % (name, elapsed, time_limit))
    check(cpu < cpu_limit, "%s: server CPU %.2f s (< %.0f)" % (name, cpu, cpu_limit))
    check(rss < rss_limit_mb, "%s: server RSS grew %.1f MB (< %d)" % (name, rss, rss_limit_mb))


# --- attacks: each returns a short description of how the server ended it, or False ---------------

def rapid_reset(port, extra=()):
    # CVE-2023-44487: HEADERS then RST_STREAM, as fast as possible.
    s = raw(port)
    enc = hpack.Encoder()
    sid, sent = 1, 0
    try:
        for _ in range(40):
            batch = b""
            for _ in range(500):
                batch += HeadersFrame(sid, headers_block(enc, "/stream", extra),
                                      flags=["END_HEADERS", "END_STREAM"]).serialize()
                batch += RstStreamFrame(sid, error_code=8).serialize()
                sid += 2
            s.sendall(batch)
            sent += 500
    except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
        pass
    closed, data = drain_until_closed(s, 10)
    s.close()
    return closed and "closed after %d resets, GOAWAY %s" % (sent, goaway_code(data))


def paced_rapid_reset(port):
    # The same, paced so that each batch of requests reaches the app before its resets arrive.
    s = raw(port)
    enc = hpack.Encoder()
    sid = 1
    try:
        for _ in range(60):
            ids = list(range(sid, sid + 32, 2))
            sid += 32
            s.sendall(b"".join(HeadersFrame(i, headers_block(enc, "/", [("x-csgi-test", "sleep")]),
                                            flags=["END_HEADERS", "END_STREAM"]).serialize() for i in ids))
            time.sleep(0.005)
            s.sendall(b"".join(RstStreamFrame(i, error_code=8).serialize() for i in ids))
    except (BrokenPipeError, ConnectionResetError):
        pass
    closed, data = drain_until_closed(s, 2)
    s.close()
    return "%d streams opened and reset (closed=%s, GOAWAY %s)" % ((sid - 1) // 2, closed, goaway_code(data))


def continuation_flood(port):
    # CVE-2024-27316: a header block that never ends.
    s = raw(port)
    enc = hpack.Encoder()
    try:
        s.sendall(HeadersFrame(1, headers_block(enc), flags=[]).serialize())
        junk = enc.encode([("x-junk", "a" * 1000)])
        for _ in range(2000):
            s.sendall(ContinuationFrame(1, junk, flags=[]).serialize())
    except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
        pass
    closed, data = drain_until_closed(s, 10)
    s.close()
    return closed and "closed, GOAWAY %s" % goaway_code(data)


def hpack_bomb(port):
    # One 4 KB field in the dynamic table, then blocks that name it by its one-byte index many times.
    s = raw(port)
    enc = hpack.Encoder()
    first = headers_block(enc, "/hello", [("x-bomb", "b" * 4000)])
    s.sendall(HeadersFrame(1, first, flags=["END_HEADERS", "END_STREAM"]).serialize())
    try:
        for i in range(50):
            # :method GET, :scheme http, :path / (static), :authority x (not indexed): the table stays put.
            block = b"\x82\x86\x84\x01\x01x" + bytes([0x80 | 62]) * 15000  # index 62: x-bomb
            s.sendall(HeadersFrame(3 + 2 * i, block, flags=["END_HEADERS", "END_STREAM"]).serialize())
    except (BrokenPipeError, ConnectionResetError):
        pass
    closed, data = drain_until_closed(s, 10)
    s.close()
    return (closed or b"431" in data) and "closed=%s, GOAWAY %s" % (closed, goaway_code(data))


def settings_flood(port):
    s = raw(port)
    s.settimeout(5)
    try:
        frame = SettingsFrame(0, settings={0x4: 65535}).serialize()
        # Never reads the ACKs. 2,000 frames per write arrive together, so that the server has more than
        # its limit of queued ACKs to answer at once however fast it keeps up with the peer.
        for _ in range(10):
            s.sendall(frame * 2000)
    except (BrokenPipeError, ConnectionResetError, socket.timeout):
        pass
    closed, data = drain_until_closed(s, 10)
    s.close()
    return closed and "closed, GOAWAY %s" % goaway_code(data)


def ping_flood(port):
    # A peer that sends PINGs and never reads the ACKs: once its socket is full the server stops reading
    # it (its queue of ACKs stays bounded), so the flood stalls; or the server ends it (too many ACKs).
    s = raw(port)
    s.settimeout(3)
    sent = 0
    try:
        frame = PingFrame(0, opaque_data=b"12345678").serialize()
        batch = frame * 1000
        deadline = time.time() + 10
        while time.time() < deadline:
            s.sendall(batch)
            sent += 1000
    except socket.timeout:
        s.close()
        return "stalled by back-pressure after %d PINGs" % sent
    except (BrokenPipeError, ConnectionResetError):
        pass
    closed, data = drain_until_closed(s, 10)
    s.close()
    return closed and "closed, GOAWAY %s" % goaway_code(data)


def empty_data_flood(port):
    # CVE-2019-9518: DATA frames without payload nor END_STREAM on an open request.
    s = raw(port)
    enc = hpack.Encoder()
    try:
        s.sendall(HeadersFrame(1, headers_block(enc, "/hello", [("content-type", "text/plain")]),
                               flags=["END_HEADERS"]).serialize())
        frame = DataFrame(1, b"").serialize()
        for _ in range(100):
            s.sendall(frame * 1000)
    except (BrokenPipeError, ConnectionResetError):
        pass
    closed, data = drain_until_closed(s, 10)
    s.close()
    return closed and "closed, GOAWAY %s" % goaway_code(data)


def unfinished_bodies(srv, conns=8, mib=24):
    """`conns` connections each send `mib` MiB of DATA on one stream without END_STREAM, all at once,
    and stay open: the server's RSS growth in MB, measured while they are open (the bodies past
    --body-buffer-bytes are in their temporary files, not in memory)."""
    rss0 = srv.rss_mb()
    clients = [Client(srv.port, timeout=30) for _ in range(conns)]
    chunk = b"u" * 16384
    left = {}
    for c in clients:
        sid = c.h2.get_next_available_stream_id()
        c.streams[sid] = {"status": None, "headers": {}, "body": b"", "ended": False, "reset": None, "interim": []}
        c.h2.send_headers(sid, [(":method", "POST"), (":path", "/hello"), (":scheme", "http"),
                                (":authority", "127.0.0.1")], end_stream=False)
        c.flush()
        left[c] = (sid, mib << 20)
    deadline = time.time() + 120
    while any(n for _, n in left.values()) and time.time() < deadline:
        for c in clients:
            sid, n = left[c]
            if not n:
                continue
            room = min(c.h2.local_flow_control_window(sid), c.h2.max_outbound_frame_size, n)
            if room <= 0:
                if not c.pump() or c.streams[sid]["reset"] is not None:
                    left[c] = (sid, 0)
                continue
            c.h2.send_data(sid, chunk[:room], end_stream=False)
            c.flush()
            left[c] = (sid, n - room)
    time.sleep(0.5)  # the last DATA read by the server
    grown = srv.rss_mb() - rss0
    for c in clients:
        c.close()
    return grown


def trickled_body(port):
    """A request body trickled in small DATA frames, each well within --body-timeout (1 s), far below
    --body-min-rate (1000 bytes/s): the connection is closed while the trickle goes on."""
    s = raw(port)
    enc = hpack.Encoder()
    block = enc.encode([(":method", "POST"), (":path", "/hello"), (":scheme", "http"), (":authority", "x")])
    s.sendall(HeadersFrame(1, block, flags=["END_HEADERS"]).serialize())
    s.settimeout(0.2)
    for sent in range(50):
        try:
            s.sendall(DataFrame(1, b"0123456789").serialize())
            while s.recv(65536):
                pass
            s.close()
            return "closed after %d pieces" % sent
        except socket.timeout:
            continue
        except (BrokenPipeError, ConnectionResetError):
            s.close()
            return "reset after %d pieces" % sent
    s.close()
    return False


def zero_window(port):
    # Slow read: the client's windows are 0 and never open; --send-timeout 2 must end it.
    s = connect(port)
    s.sendall(PREFACE + SettingsFrame(0, settings={0x4: 0}).serialize())
    enc = hpack.Encoder()
    s.sendall(HeadersFrame(1, enc.encode([(":method", "GET"), (":path", "/?"), (":scheme", "http"),
                                          (":authority", "x"), ("x-csgi-test", "file_big")]),
                           flags=["END_HEADERS", "END_STREAM"]).serialize())
    t0 = time.time()
    closed, _ = drain_until_closed(s, 15)
    s.close()
    return closed and "closed after %.1f s" % (time.time() - t0)


def zero_window_with_pings(port):
    # The same slow read, with a PING every 0.5 s: its ACKs are traffic, not progress of the response.
    s = connect(port)
    s.sendall(PREFACE + SettingsFrame(0, settings={0x4: 0}).serialize())
    enc = hpack.Encoder()
    s.sendall(HeadersFrame(1, enc.encode([(":method", "GET"), (":path", "/?"), (":scheme", "http"),
                                          (":authority", "x"), ("x-csgi-test", "file_big")]),
                           flags=["END_HEADERS", "END_STREAM"]).serialize())
    t0 = time.time()
    s.settimeout(0.5)
    while time.time() - t0 < 15:
        try:
            s.sendall(PingFrame(0, opaque_data=b"pingpong").serialize())
            if s.recv(65536) == b"":
                break
        except socket.timeout:
            continue
        except (BrokenPipeError, ConnectionResetError):
            break
        time.sleep(0.5)
    else:
        s.close()
        return False
    s.close()
    return "closed after %.1f s" % (time.time() - t0)


def stream_id_exhaustion(port):
    # The last stream id a client has, answered; then a lower one, a connection error; the server goes on.
    s = raw(port)
    enc = hpack.Encoder()
    s.sendall(HeadersFrame(0x7FFFFFFF, headers_block(enc, "/hello"), flags=["END_HEADERS", "END_STREAM"]).serialize())
    time.sleep(0.2)
    try:
        s.sendall(HeadersFrame(3, headers_block(enc, "/hello"), flags=["END_HEADERS", "END_STREAM"]).serialize())
    except (BrokenPipeError, ConnectionResetError):
        pass
    closed, data = drain_until_closed(s, 3)
    s.close()
    answered = data.count(b"Hello, world!") == 1
    return answered and "stream 2^31-1 answered, the lower id not (closed=%s, GOAWAY %s)" % (closed, goaway_code(data))


def trailer_checks(port, label=""):
    """Trailer fields of a pull stream and a writer (conformance app): a trailing HEADERS frame that ends the
    stream after the DATA (ADP-17); none on HEAD; after a body held back by a 4 KiB window too."""
    want = {b"grpc-status": b"0", b"server-timing": b"app;dur=1"}
    c = Client(port)
    for test in ("trailers_stream", "trailers_writer"):
        sid = c.request("/", headers=[("x-csgi-test", test)])
        ok = c.wait([sid])
        st = c.streams[sid]
        check(ok and st["status"] == 200 and st["body"] == b"one two three" and st.get("trailers") == want and
              b"grpc-status" not in st["headers"] and st["headers"].get(b"trailer") == b"grpc-status, Server-Timing",
              label + "%s: trailers after the body (ADP-17): %r" % (test, st.get("trailers")))
        sid = c.request("/", method="HEAD", headers=[("x-csgi-test", test)])
        ok = c.wait([sid])
        st = c.streams[sid]
        check(ok and st["status"] == 200 and st["body"] == b"" and "trailers" not in st,
              label + "%s: HEAD gets no trailers (ADP-17)" % test)
    c.close()
    c = Client(port, window=4096)
    sid = c.request("/", headers=[("x-csgi-test", "trailers_big")])
    c.read_windowed(sid)
    st = c.streams[sid]
    check(st["ended"] and st["body"] == b"x" * 262144 and st.get("trailers") == want,
          label + "256 kB through a 4 KiB window, then its trailers (%d bytes, %r)" % (len(st["body"]), st.get("trailers")))
    c.close()
    trailers_only_checks(port, label)
    if not TLS and shutil.which("nghttp"):
        for test in ("trailers_stream", "trailers_writer"):
            r = subprocess.run(["nghttp", "-v", "-H", "x-csgi-test: " + test, "http://127.0.0.1:%d/" % port],
                               capture_output=True, text=True, timeout=20)
            # nghttp prints a frame's fields before the frame: after the last DATA frame come the trailers,
            # then the HEADERS frame that ends the stream; no DATA frame ends it.
            tail = r.stdout[r.stdout.rfind("recv DATA frame"):]
            data_end = [l for l in r.stdout.splitlines() if "recv DATA frame" in l and "flags=0x01" in l]
            check(r.returncode == 0 and not data_end and "grpc-status: 0" in tail and
                  "server-timing: app;dur=1" in tail and "recv HEADERS frame" in tail and
                  "END_STREAM" in tail[tail.find("recv HEADERS frame"):],
                  "nghttp -v: %s ends with a trailing HEADERS frame (ADP-17)" % test)


def trailers_only_checks(port, label=""):
    """An empty stream or writer body with trailers (gRPC's trailers-only answer): the response HEADERS
    without END_STREAM, then the trailers in the HEADERS frame that ends the stream (ADP-17), no DATA."""
    c = Client(port)
    for test in ("trailers_only", "trailers_only_writer"):
        sid = c.request("/", headers=[("x-csgi-test", test)])
        ok = c.wait([sid])
        st = c.streams[sid]
        kinds = [type(e).__name__ for e in c.events if getattr(e, "stream_id", None) == sid and
                 not isinstance(e, h2.events.StreamEnded)]
        head_ended = any(isinstance(e, h2.events.ResponseReceived) and e.stream_ended is not None
                         for e in c.events if getattr(e, "stream_id", None) == sid)
        trailer_ended = any(isinstance(e, h2.events.TrailersReceived) and e.stream_ended is not None
                            for e in c.events if getattr(e, "stream_id", None) == sid)
        check(ok and st["status"] == 200 and st["body"] == b"" and st.get("trailers") == {b"grpc-status": b"5"} and
              not head_ended and trailer_ended and "DataReceived" not in kinds,
              label + "%s: HEADERS, then the trailers end the stream (ADP-17): %r %r" % (test, kinds, st.get("trailers")))
        sid = c.request("/", method="HEAD", headers=[("x-csgi-test", test)])
        ok = c.wait([sid])
        st = c.streams[sid]
        check(ok and st["status"] == 200 and "trailers" not in st, label + "%s: HEAD gets no trailers" % test)
    c.close()


def cut_short_logged():
    """A connection that goes away in the middle of a response body: the stream still gets its access log
    line, with its status and the body bytes sent until then."""
    with tempfile.TemporaryDirectory() as d:
        log = os.path.join(d, "access.log")
        srv = Server(["--app", APP, "--app-threads", "2", "--access-log", log])
        c = Client(srv.port)
        sid = c.request("/", headers=[("x-csgi-test", "writer_gone"), ("x-token", "h2cut")])
        deadline = time.time() + 10
        while len(c.streams[sid]["body"]) < 100000 and time.time() < deadline and c.pump():
            pass
        got = len(c.streams[sid]["body"])
        c.close()
        line = ""
        deadline = time.time() + 5
        while not line and time.time() < deadline:
            time.sleep(0.02)
            line = next((l for l in open(log).read().splitlines() if '"GET / HTTP/2" 200 ' in l), "")
        sent = int(line.split('" 200 ')[1].split()[0]) if line else -1
        check(got >= 100000 and got <= sent < 3000 * 16384,
              "a stream cut short by its connection's end is logged: 200 with %d bytes (client read %d)"
              % (sent, got))
        check(srv.stop() == 0, "server exits 0 after SIGTERM")


def graceful_stop(srv, label):
    """SIGTERM with a stream in flight: GOAWAY (NO_ERROR), the stream finishes after it, the connection
    closes, the server exits 0 (raw frames: python3-h2 drops a connection's streams on GOAWAY)."""
    s = raw(srv.port)
    enc = hpack.Encoder()
    s.sendall(HeadersFrame(1, headers_block(enc, "/", [("x-csgi-test", "sleep")]),
                           flags=["END_HEADERS", "END_STREAM"]).serialize())
    time.sleep(0.1)
    srv.p.send_signal(signal.SIGTERM)
    closed, data = drain_until_closed(s, 10)
    s.close()
    g = data.find(b"\x07\x00\x00\x00\x00\x00")  # GOAWAY header: type 7, flags 0, stream 0
    check(closed and g >= 0 and goaway_code(data) == 0, label + "graceful stop: GOAWAY NO_ERROR, then closed")
    check(data.find(b"slept") > g >= 0, label + "graceful stop: the stream in flight finishes after the GOAWAY")
    try:
        rc = srv.p.wait(15)
    except subprocess.TimeoutExpired:
        srv.p.kill()
        rc = None
    check(rc == 0, label + "server exits 0 after SIGTERM (%s)" % rc)


def h2c_upgrade_ignored(port):
    """Default options: an HTTP/1.1 request asking for Upgrade: h2c is answered in HTTP/1.1, no 101, and the
    HTTP/2 bytes a client sends after it are no HTTP/2 stream (they would pass a front proxy unseen)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(b"GET /hello HTTP/1.1\r\nHost: a\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\n"
              b"HTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n"
              b"GET /hello HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
    closed, data = drain_until_closed(s, 10)
    s.close()
    check(closed and data.startswith(b"HTTP/1.1 200 ") and b" 101 " not in data and data.count(b"HTTP/1.1 200 ") == 2
          and data.count(b"Hello, world!") == 2,
          "default: Upgrade: h2c + HTTP2-Settings ignored, both requests answered in HTTP/1.1 (%r)" % data[:60])
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    enc = hpack.Encoder()
    s.sendall(b"GET /hello HTTP/1.1\r\nHost: a\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\n"
              b"HTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n" + PREFACE + SettingsFrame(0).serialize() +
              HeadersFrame(3, headers_block(enc, "/env"), flags=["END_HEADERS", "END_STREAM"]).serialize())
    closed, data = drain_until_closed(s, 10)
    s.close()
    check(data.startswith(b"HTTP/1.1 200 ") and b" 101 " not in data and b"SERVER_PROTOCOL" not in data,
          "default: the HTTP/2 stream 3 after an ignored Upgrade: h2c is not served (%r)" % data[:60])


def h2c_upgrade_on():
    """--h2c-upgrade: Upgrade: h2c (RFC 7540 §3.2) is taken: 101, then the request's answer on stream 1; one
    with a body stays HTTP/1.1."""
    srv = Server(["--demo", "--h2c-upgrade"])
    base = "http://127.0.0.1:%d" % srv.port
    if shutil.which("curl"):
        r = subprocess.run(["curl", "-s", "--http2", "-w", "\n%{http_version}", base + "/hello"], capture_output=True,
                           text=True, timeout=20)
        check(r.stdout == "Hello, world!\n2", "curl --http2 (Upgrade: h2c): upgraded: %r" % r.stdout)
        r = subprocess.run(["curl", "-s", "--http2", "-w", "\n%{http_version}", base + "/env"], capture_output=True,
                           text=True, timeout=20)
        check("SERVER_PROTOCOL</td><td>HTTP/2" in r.stdout and "HTTP_UPGRADE" not in r.stdout and
              "HTTP_HTTP2_SETTINGS" not in r.stdout, "the upgraded request's env is an HTTP/2 one (ENV-16)")
        r = subprocess.run(["curl", "-sI", "--http2", base + "/hello"], capture_output=True, text=True, timeout=20)
        check("HTTP/2 200" in r.stdout and "content-length: 13" in r.stdout, "curl -I --http2: HEAD upgraded")
        r = subprocess.run(["curl", "-s", "--http2", "-d", "x=1", "-w", "\n%{http_version}", base + "/hello"],
                           capture_output=True, text=True, timeout=20)
        check(r.stdout == "Hello, world!\n1.1", "Upgrade: h2c with a body: answered as HTTP/1.1: %r" % r.stdout)
    if shutil.which("nghttp"):
        r = subprocess.run(["nghttp", "-u", "-v", base + "/hello"], capture_output=True, text=True, timeout=20)
        check(r.returncode == 0 and "HTTP Upgrade success" in r.stdout and "Hello, world!" in r.stdout,
              "nghttp -u (Upgrade: h2c): exit %d" % r.returncode)
    check(srv.stop() == 0, "--h2c-upgrade: exits 0 after SIGTERM")


def main():
    # Real clients against the demo.
    srv = Server(["--demo"])
    base = "http://127.0.0.1:%d" % srv.port
    if shutil.which("curl"):
        r = subprocess.run(["curl", "-s", "--http2-prior-knowledge", "-w", "\n%{http_version}", base + "/hello"],
                           capture_output=True, text=True, timeout=20)
        check(r.stdout == "Hello, world!\n2", "curl --http2-prior-knowledge: %r" % r.stdout)
        r = subprocess.run(["curl", "-sI", "--http2-prior-knowledge", base + "/hello"], capture_output=True, text=True,
                           timeout=20)
        check(r.stdout.startswith("HTTP/2 200") and "content-length: 13" in r.stdout, "curl HEAD: %r" % r.stdout[:80])
        r = subprocess.run(["curl", "-s", "--http2-prior-knowledge", base + "/stream"], capture_output=True, text=True,
                           timeout=20)
        check(r.stdout.count("written by a delayed writer") == 10, "curl: the demo's delayed writer streams 10 lines")
        # Upgrade: h2c is off by default: the curl that would upgrade gets HTTP/1.1.
        r = subprocess.run(["curl", "-s", "--http2", "-w", "\n%{http_version}", base + "/hello"], capture_output=True,
                           text=True, timeout=20)
        check(r.stdout == "Hello, world!\n1.1", "default: curl --http2 (Upgrade: h2c) answered in HTTP/1.1: %r" % r.stdout)
    h2c_upgrade_ignored(srv.port)
    if shutil.which("nghttp"):
        r = subprocess.run(["nghttp", "-n", "-s", "-m", "20", base + "/hello"], capture_output=True, text=True, timeout=20)
        check(r.returncode == 0 and r.stdout.count("200") >= 1, "nghttp -m 20: exit %d" % r.returncode)
        r = subprocess.run(["nghttp", "-v", base + "/env"], capture_output=True, text=True, timeout=20)
        check(r.returncode == 0 and "SERVER_PROTOCOL</td><td>HTTP/2" in r.stdout, "nghttp: the env says HTTP/2")
    # HEAD without body, over python3-h2.
    c = Client(srv.port)
    sid = c.request("/hello", method="HEAD")
    c.wait([sid])
    st = c.streams[sid]
    check(st["status"] == 200 and st["body"] == b"" and st["headers"].get(b"content-length") == b"13",
          "HEAD: 200, no DATA, content-length 13")
    c.close()

    # Hostile peers, each followed by a normal client.
    for name, attack in [("rapid reset", rapid_reset), ("CONTINUATION flood", continuation_flood),
                         ("HPACK bomb", hpack_bomb), ("SETTINGS flood", settings_flood), ("PING flood", ping_flood),
                         ("empty DATA flood", empty_data_flood), ("stream-id exhaustion", stream_id_exhaustion)]:
        hostile(srv, name, attack)
    check(srv.stop() == 0, "demo server exits 0 after SIGTERM")
    h2c_upgrade_on()

    # A trickled body that keeps re-arming --body-timeout is ended by --body-min-rate.
    srv = Server(["--demo", "--body-timeout", "1", "--body-min-rate", "1000"])
    hostile(srv, "trickled body", trickled_body)
    check(srv.stop() == 0, "demo server exits 0 after SIGTERM")

    # Unfinished request bodies on many connections are held past --body-buffer-bytes in temporary files,
    # within the process's --body-memory-bytes in memory, not whole in RAM.
    srv = Server(["--demo", "--h2-initial-window", "1048576", "--body-memory-bytes", "8388608"])
    grown = unfinished_bodies(srv)
    check(grown < 48, "8 unfinished HTTP/2 bodies of 24 MiB: server RSS grew %.1f MB (< 48)" % grown)
    status, body = get(srv.port, "/hello")
    check(status == 200 and body == b"Hello, world!", "unfinished bodies: another client is served")
    check(srv.stop() == 0, "demo server exits 0 after SIGTERM")

    # The conformance app on a pool: many streams on one connection, several in the app at once.
    srv = Server(["--app", APP, "--app-threads", "4", "--max-body-bytes", "100000", "--send-timeout", "2"])
    c = Client(srv.port)
    sids = [c.request("/seq/%d" % i) for i in range(100)]
    ok = c.wait(sids)
    check(ok and all(c.streams[s]["body"] == b"%d" % i for i, s in enumerate(sids)),
          "100 concurrent streams on one connection, each its own answer")
    t0 = time.time()
    sids = [c.request("/", headers=[("x-csgi-test", "sleep")]) for _ in range(8)]
    c.wait(sids)
    took = time.time() - t0
    check(all(c.streams[s]["body"] == b"slept" for s in sids) and took < 1.8,
          "8 streams of 300 ms on 4 app threads took %.2f s (in parallel: < 1.8)" % took)
    # Per-stream refusals keep the connection.
    sid = c.request("/", method="POST", headers=[("x-csgi-test", "echo")], body=b"x" * 150000)
    c.wait([sid])
    check(c.streams[sid]["status"] == 413, "a body over --max-body-bytes: 413 (%s)" % c.streams[sid]["status"])
    # Bodies in flight at once on one connection stay within one --max-body-bytes: 4 uploads of 40000
    # bytes sent side by side (1000 allowed): the ones past the budget are refused (REFUSED_STREAM: not
    # processed, a client may retry), the others echoed whole.
    ups = []
    for _ in range(4):
        sid = c.h2.get_next_available_stream_id()
        c.streams[sid] = {"status": None, "headers": {}, "body": b"", "ended": False, "reset": None, "interim": []}
        c.h2.send_headers(sid, [(":method", "POST"), (":path", "/"), (":scheme", "http"), (":authority", "x"),
                                ("x-csgi-test", "echo"), ("content-length", "40000")])
        ups.append(sid)
    for i in range(4):
        for sid in ups:
            if c.streams[sid]["reset"] is None:
                c.h2.send_data(sid, b"u" * 10000, end_stream=(i == 3))
        c.flush()
        time.sleep(0.05)
    c.wait(ups)
    refused = [s for s in ups if c.streams[s]["reset"] == 7]
    echoed = [s for s in ups if c.streams[s]["body"] == b"u" * 40000]
    check(refused and echoed and len(refused) + len(echoed) == 4,
          "uploads side by side past the connection's body budget: %d refused, %d echoed" % (len(refused), len(echoed)))
    sid = c.request("/", headers=[("x-csgi-test", "informational")])
    c.wait([sid])
    st = c.streams[sid]
    check(st["interim"] and st["interim"][0].get(b":status") == b"103" and st["body"] == b"sent 103",
          "103 Early Hints from the pool, then 200")
    sid = c.request("/seq/still")
    c.wait([sid])
    check(c.streams[sid]["body"] == b"still", "the connection serves on after the refusals")
    c.close()
    trailer_checks(srv.port)
    # A malformed request (a pseudo-header after a regular one) is reset alone.
    s = raw(srv.port)
    enc = hpack.Encoder()
    bad = enc.encode([(":method", "GET"), ("x-a", "1"), (":path", "/seq/bad"), (":scheme", "http"), (":authority", "x")])
    s.sendall(HeadersFrame(1, bad, flags=["END_HEADERS", "END_STREAM"]).serialize())
    s.sendall(HeadersFrame(3, headers_block(enc, "/seq/good"), flags=["END_HEADERS", "END_STREAM"]).serialize())
    s.settimeout(5)
    data = b""
    deadline = time.time() + 5
    while b"good" not in data and time.time() < deadline:
        try:
            d = s.recv(65536)
        except socket.timeout:
            break
        if not d:
            break
        data += d
    s.close()
    check(b"good" in data and b"\x03\x00\x00\x00\x00\x01" in data, "a malformed stream is reset, the next one answered")

    # A 1.3 MB file to a client with a 4 KiB window that it opens slowly: flow control respected.
    c = Client(srv.port, window=4096)
    sid = c.request("/", headers=[("x-csgi-test", "file_big")])
    over_window = not c.read_windowed(sid)
    body = c.streams[sid]["body"]
    want = bytes(((i * 7 + 3) & 0xFF) for i in range(1300000))
    check(c.streams[sid]["ended"] and hashlib.sha256(body).digest() == hashlib.sha256(want).digest() and not over_window,
          "1.3 MB file through a 4 KiB window: %d bytes, never past the window" % len(body))
    c.close()

    hostile(srv, "zero window held forever", zero_window, probe=("/seq/ok", b"ok"))
    hostile(srv, "zero window held forever, with PINGs", zero_window_with_pings, probe=("/seq/ok", b"ok"))

    graceful_stop(srv, "")
    cut_short_logged()

    # Rapid reset against apps on the pool that take 300 ms each: the reset streams whose app still runs
    # count against --h2-max-streams, so the attacker queues at most 16 calls, not thousands.
    srv = Server(["--app", APP, "--app-threads", "4", "--h2-max-streams", "16"])
    hostile(srv, "rapid reset, slow app on the pool", paced_rapid_reset, probe=("/seq/ok", b"ok"))
    check(srv.stop() == 0, "pool server exits 0 after SIGTERM")

    # An idle connection is closed at --idle-timeout with GOAWAY(NO_ERROR); a request's 100-continue.
    srv = Server(["--app", APP, "--idle-timeout", "1"])
    trailers_only_checks(srv.port, "inline: ")
    c = Client(srv.port)
    sid = c.request("/", method="POST", headers=[("x-csgi-test", "echo"), ("expect", "100-continue"),
                                                 ("content-length", "5")], body=b"hello")
    c.wait([sid])
    st = c.streams[sid]
    check(st["interim"] and st["interim"][0].get(b":status") == b"100" and st["body"] == b"hello",
          "Expect: 100-continue: a 100, then the echo (%r)" % st["interim"])
    sid = c.request("/seq/x", headers=[("expect", "100-continue")])  # no body: HEADERS end the stream
    c.wait([sid])
    check(c.streams[sid]["interim"] == [] and c.streams[sid]["body"] == b"x",
          "Expect: 100-continue without a body: no 100 (%r)" % c.streams[sid]["interim"])
    t0 = time.time()
    closed, data = drain_until_closed(c.s, 5)
    check(closed and goaway_code(data) == 0 and time.time() - t0 < 3,
          "idle connection closed with GOAWAY NO_ERROR after --idle-timeout (%.1f s)" % (time.time() - t0))
    c.close()
    check(srv.stop() == 0, "server exits 0 after SIGTERM")

    certs = Certs()
    try:
        over_tls(certs)
        h2_off(certs)
    finally:
        shutil.rmtree(certs.dir, ignore_errors=True)

    print("%d failure(s)" % len(failures))
    return 1 if failures else 0


def curl(args, url, ca):
    r = subprocess.run(["curl", "-s", "--cacert", ca] + args + [url], capture_output=True, text=True, timeout=20)
    return r.stdout


def http1_over_tls(port, ca, request):
    """Sends `request` on a TLS connection on which ALPN chose http/1.1; returns what came back before the
    server closed (or 3 s passed)."""
    s = tls_context(ca, ("http/1.1",)).wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=5),
                                                   server_hostname="localhost")
    alpn = s.selected_alpn_protocol()
    s.sendall(request)
    _, data = drain_until_closed(s, 3)
    s.close()
    return alpn, data


def over_tls(certs):
    global TLS
    tls = ["--tls-cert", certs.server[0], "--tls-key", certs.server[1]]
    srv = Server(["--demo"] + tls, listen="https://127.0.0.1:0")
    base = "https://localhost:%d" % srv.port
    if shutil.which("curl"):
        got = curl(["--http2", "-w", "\n%{http_version}"], base + "/hello", certs.ca)
        check(got == "Hello, world!\n2", "TLS: curl --http2 https://: HTTP/2 by ALPN (%r)" % got)
        got = curl(["--http1.1", "-w", "\n%{http_version}"], base + "/hello", certs.ca)
        check(got == "Hello, world!\n1.1", "TLS: curl --http1.1 https://: HTTP/1.1 by ALPN (%r)" % got)
        got = curl(["--http2"], base + "/env", certs.ca)
        check(all(x in got for x in ("SERVER_PROTOCOL</td><td>HTTP/2", "csgi.url_scheme</td><td>https",
                                     "HTTPS</td><td>on", "SSL_PROTOCOL</td><td>TLSv1.3", "SSL_TLS_SNI</td><td>localhost")),
              "TLS: a stream's env: HTTP/2, https, HTTPS on, SSL_PROTOCOL, SSL_TLS_SNI (ENV-16, ENV-17, ENV-18)")
        got = curl(["--http2"], base + "/stream", certs.ca)
        check(got.count("written by a delayed writer") == 10, "TLS: the demo's delayed writer streams 10 lines over h2")
    if shutil.which("nghttp"):
        r = subprocess.run(["nghttp", "-v", base + "/env"], capture_output=True, text=True, timeout=20)
        check(r.returncode == 0 and "negotiated protocol: h2" in r.stdout and "SERVER_PROTOCOL</td><td>HTTP/2" in r.stdout,
              "TLS: nghttp https://: h2 negotiated, the env says HTTP/2 (exit %d)" % r.returncode)
        r = subprocess.run(["nghttp", "-n", "-s", "-m", "20", base + "/hello"], capture_output=True, text=True, timeout=20)
        check(r.returncode == 0, "TLS: nghttp -m 20 over one TLS connection: exit %d" % r.returncode)
    # h2c is not for TLS (RFC 9113 §3.3): on a connection where ALPN chose http/1.1, the preface is no
    # HTTP/2 and Upgrade: h2c is not taken.
    alpn, data = http1_over_tls(srv.port, certs.ca, PREFACE + SettingsFrame(0).serialize())
    check(alpn == "http/1.1" and re.match(rb"HTTP/1\.1 [45]\d\d ", data) is not None,
          "TLS: the h2c preface on an http/1.1 connection is answered as HTTP/1.1 (%r)" % data[:40])
    alpn, data = http1_over_tls(srv.port, certs.ca, b"GET /hello HTTP/1.1\r\nHost: localhost\r\nConnection: Upgrade, "
                                b"HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n")
    check(data.startswith(b"HTTP/1.1 200 ") and data.endswith(b"Hello, world!"),
          "TLS: Upgrade: h2c is not taken, the request answered in HTTP/1.1 (%r)" % data[:40])
    c = None
    TLS = tls_context(certs.ca)
    try:
        c = Client(srv.port)
        check(c.s.selected_alpn_protocol() == "h2", "TLS: python3-h2 offering h2 alone gets h2")
        sid = c.request("/hello", method="HEAD")
        c.wait([sid])
        st = c.streams[sid]
        check(st["status"] == 200 and st["body"] == b"" and st["headers"].get(b"content-length") == b"13",
              "TLS: HEAD: 200, no DATA, content-length 13")
        c.close()
        # ALPN said h2: HTTP/1.1 bytes instead of the preface end the connection, never answered as HTTP/1.
        s = connect(srv.port)
        s.sendall(b"GET /hello HTTP/1.1\r\nHost: localhost\r\n\r\n")
        closed, data = drain_until_closed(s, 5)
        s.close()
        check(closed and b"HTTP/1.1" not in data, "TLS: ALPN h2, then no preface: closed, no HTTP/1 answer (%r)" % data[:40])
        for name, attack in [("rapid reset", rapid_reset), ("CONTINUATION flood", continuation_flood)]:
            hostile(srv, "TLS: " + name, attack)
        check(srv.stop() == 0, "TLS: demo server exits 0 after SIGTERM")

        srv = Server(["--app", APP, "--app-threads", "4", "--send-timeout", "2"] + tls, listen="https://127.0.0.1:0")
        c = Client(srv.port)
        sids = [c.request("/seq/%d" % i) for i in range(100)]
        ok = c.wait(sids)
        check(ok and all(c.streams[s]["body"] == b"%d" % i for i, s in enumerate(sids)),
              "TLS: 100 concurrent streams on one connection, each its own answer")
        sid = c.request("/", method="POST", headers=[("x-csgi-test", "echo")], body=b"e" * 300000)
        c.wait([sid])
        check(c.streams[sid]["body"] == b"e" * 300000, "TLS: a 300 kB upload echoed")
        c.close()
        trailer_checks(srv.port, "TLS: ")
        c = Client(srv.port, window=4096)
        sid = c.request("/", headers=[("x-csgi-test", "file_big")])
        c.read_windowed(sid)
        want = bytes(((i * 7 + 3) & 0xFF) for i in range(1300000))
        check(hashlib.sha256(c.streams[sid]["body"]).digest() == hashlib.sha256(want).digest(),
              "TLS: a 1.3 MB file through a 4 KiB window (%d bytes)" % len(c.streams[sid]["body"]))
        c.close()
        hostile(srv, "TLS: zero window held forever", zero_window, probe=("/seq/ok", b"ok"))
        graceful_stop(srv, "TLS: ")
    finally:
        TLS = None
        if c:
            c.close()
        if srv.p.poll() is None:
            srv.p.kill()


def h2_off(certs):
    """--h2-max-streams 0: no HTTP/2 in the clear nor over TLS."""
    tls = ["--tls-cert", certs.server[0], "--tls-key", certs.server[1]]
    srv = Server(["--demo", "--h2-max-streams", "0"] + tls, listen="https://127.0.0.1:0")
    if shutil.which("curl"):
        got = curl(["--http2", "-w", "\n%{http_version}"], "https://localhost:%d/hello" % srv.port, certs.ca)
        check(got == "Hello, world!\n1.1", "--h2-max-streams 0, TLS: curl --http2 gets HTTP/1.1 (%r)" % got)
    try:
        s = tls_context(certs.ca).wrap_socket(socket.create_connection(("127.0.0.1", srv.port), timeout=5),
                                              server_hostname="localhost")
        s.close()
        check(False, "--h2-max-streams 0, TLS: ALPN h2 alone refused")
    except ssl.SSLError as e:
        check("NO APPLICATION PROTOCOL" in str(e).upper().replace("_", " "),
              "--h2-max-streams 0, TLS: ALPN h2 alone refused (%s)" % e)
    check(srv.stop() == 0, "--h2-max-streams 0, TLS: exits 0 after SIGTERM")
    srv = Server(["--demo", "--h2-max-streams", "0", "--h2c-upgrade"])
    s = raw(srv.port)
    _, data = drain_until_closed(s, 3)
    s.close()
    check(re.match(rb"HTTP/1\.1 [45]\d\d ", data) is not None,
          "--h2-max-streams 0: the preface is answered as HTTP/1.1 (%r)" % data[:40])
    if shutil.which("curl"):
        r = subprocess.run(["curl", "-s", "--http2", "-w", "\n%{http_version}", "http://127.0.0.1:%d/hello" % srv.port],
                           capture_output=True, text=True, timeout=20)
        check(r.stdout == "Hello, world!\n1.1", "--h2-max-streams 0: Upgrade: h2c not taken (%r)" % r.stdout)
    check(srv.stop() == 0, "--h2-max-streams 0: exits 0 after SIGTERM")


if __name__ == "__main__":
    sys.exit(main())
