#!/usr/bin/python3
"""The csgi conformance suite, client side (adapter-agnostic, like Plack::Test::Suite).

Talks raw HTTP/1.1 over sockets to a server that runs libconformance_app.so (conformance_app.cpp) at
--url (scheme://host:port/prefix), runs every case of the selected groups and prints one table row per
case: case | result | note. Exit status 0 when no case failed.

  run_conformance.py --url http://127.0.0.1:8080/app [--groups core,http1,...] [--skip CASE=reason]...
  run_conformance.py --spawn 'csgi serve --app lib.so --listen 127.0.0.1:0' --prefix /app ...
  run_conformance.py --h2c ...   (every request over HTTP/2 with prior knowledge, through python3-h2)
  run_conformance.py --url https://127.0.0.1:8443/ --tls-ca ca.pem ...   (HTTPS/1.1: every socket in TLS)
  run_conformance.py --h2 --tls-ca ca.pem ...   (every request over HTTP/2 over TLS, h2 chosen by ALPN)

Groups: core (the 36 Plack::Test::Suite cases), http1 (keep-alive, pipelining, half-close, 100-continue,
HEAD, HTTP/1.0, chunked), extensions (csgix.cleanup, csgix.informational, csgix.io), range, framing
(malformed framing: 4xx and the pipelined canary never answered), limits (needs --limits), timeouts
(needs --timeouts). An adapter behind another server (nginx, Apache) skips what that server decides.
"""
import argparse
import hashlib
import os
import re
import shlex
import socket
import ssl
import subprocess
import sys
import time
import uuid
from urllib.parse import urlsplit

TLS = None  # with --tls-ca: the ssl.SSLContext every connection is wrapped in
SMALL_FILE = 4096
BIG_FILE = 1300000


def pattern(n):
    return bytes(((i * 7 + 3) & 0xFF) for i in range(n))


def fnv1a(data, h=1469598103934665603):
    for c in data:
        h ^= c
        h = (h * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h


class Response:
    def __init__(self, status, reason, headers, body, version):
        self.status, self.reason, self.headers, self.body, self.version = status, reason, headers, body, version
        self.trailers = []  # the trailer section's fields (a chunked body's, or HTTP/2's trailing HEADERS)

    def header(self, name, default=None):
        for k, v in self.headers:
            if k.lower() == name.lower():
                return v
        return default

    def all(self, name):
        return [v for k, v in self.headers if k.lower() == name.lower()]

    def __repr__(self):
        return "<%d %r>" % (self.status, self.body[:60])


class Conn:
    """One client connection with a buffered response reader."""

    def __init__(self, host, port, timeout=10, unix=None):
        if unix:
            self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.s.settimeout(timeout)
            self.s.connect(unix)
        else:
            self.s = socket.create_connection((host, port), timeout=timeout)
            if TLS:
                self.s = TLS.wrap_socket(self.s, server_hostname=host)
        self.buf = b""
        self.eof = False

    def send(self, data):
        self.s.sendall(data)

    def _fill(self):
        if self.eof:
            return False
        try:
            d = self.s.recv(65536)
        except (ConnectionResetError, ssl.SSLError):
            d = b""
        if not d:
            self.eof = True
            return False
        self.buf += d
        return True

    def _line(self):
        while b"\r\n" not in self.buf:
            if not self._fill():
                raise EOFError("connection closed")
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _exact(self, n):
        while len(self.buf) < n:
            if not self._fill():
                raise EOFError("connection closed mid-body")
        d, self.buf = self.buf[:n], self.buf[n:]
        return d

    def read_response(self, head=False, interim=False):
        """Reads one response; 1xx responses are skipped unless interim=True."""
        while True:
            line = self._line()
            m = re.match(rb"(HTTP/1\.[01]) (\d{3})(?: (.*))?$", line)
            if not m:
                raise ValueError("bad status line %r" % line)
            version, status, reason = m.group(1).decode(), int(m.group(2)), (m.group(3) or b"").decode("latin-1")
            headers = []
            while True:
                h = self._line()
                if not h:
                    break
                k, _, v = h.partition(b":")
                headers.append((k.decode("latin-1"), v.strip().decode("latin-1")))
            r = Response(status, reason, headers, b"", version)
            if 100 <= status < 200:
                if interim:
                    return r
                continue
            if head or status in (204, 304):
                return r
            te = (r.header("Transfer-Encoding") or "").lower()
            cl = r.header("Content-Length")
            if "chunked" in te:
                body = b""
                while True:
                    size = int(self._line().split(b";")[0], 16)
                    if size == 0:
                        while True:
                            t = self._line()
                            if not t:
                                break
                            k, _, v = t.partition(b":")
                            r.trailers.append((k.decode("latin-1"), v.strip().decode("latin-1")))
                        break
                    body += self._exact(size)
                    self._exact(2)
                r.body = body
            elif cl is not None:
                r.body = self._exact(int(cl))
            else:
                while self._fill():
                    pass
                r.body, self.buf = self.buf, b""
            return r

    def closed_by_peer(self, wait=3.0):
        """True when the server closes the connection within `wait` seconds (no more bytes)."""
        self.s.settimeout(wait)
        try:
            while True:
                d = self.s.recv(65536)
                if not d:
                    return True
                self.buf += d
        except (ConnectionResetError, BrokenPipeError, ssl.SSLError):
            return True
        except socket.timeout:
            return False

    def close(self):
        try:
            self.s.close()
        except OSError:
            pass


class H2Client:
    """One HTTP/2 connection through python3-h2: over cleartext (prior knowledge, RFC 9113 §3.3), or over
    TLS with h2 chosen by ALPN (§3.2)."""

    def __init__(self, host, port, timeout=10, unix=None):
        import h2.config
        import h2.connection

        self.c = Conn(host, port, timeout, unix)
        if TLS and self.c.s.selected_alpn_protocol() != "h2":
            raise ValueError("ALPN chose %r, not h2" % self.c.s.selected_alpn_protocol())
        self.h2 = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding=None))
        self.h2.initiate_connection()
        self.flush()
        self.streams = {}  # id -> dict(status, headers, body, interim, ended, reset)

    def flush(self):
        data = self.h2.data_to_send()
        if data:
            self.c.send(data)

    def pump(self):
        """Reads once and handles the events; False at the end of the connection."""
        import h2.events as ev

        try:
            d = self.c.s.recv(65536)
        except ConnectionResetError:
            d = b""
        if not d:
            return False
        for e in self.h2.receive_data(d):
            st = self.streams.get(getattr(e, "stream_id", None))
            if isinstance(e, ev.InformationalResponseReceived) and st is not None:
                st["interim"].append(Response(int(dict(e.headers)[b":status"]), "", self._hdrs(e.headers), b"", "HTTP/2"))
            elif isinstance(e, ev.ResponseReceived) and st is not None:
                st["status"] = int(dict(e.headers)[b":status"])
                st["headers"] = self._hdrs(e.headers)
            elif isinstance(e, ev.TrailersReceived) and st is not None:
                st["trailers"] = self._hdrs(e.headers)
            elif isinstance(e, ev.DataReceived):
                if st is not None:
                    st["body"] += e.data
                self.h2.acknowledge_received_data(e.flow_controlled_length, e.stream_id)
            elif isinstance(e, ev.StreamEnded) and st is not None:
                st["ended"] = True
            elif isinstance(e, ev.StreamReset) and st is not None:
                st["reset"] = e.error_code
            elif isinstance(e, ev.ConnectionTerminated):
                for st in self.streams.values():
                    if not st["ended"] and st["reset"] is None and (e.last_stream_id or 0) < min(self.streams):
                        st["reset"] = "goaway"
        self.flush()
        return True

    @staticmethod
    def _hdrs(headers):
        return [(k.decode("latin-1"), v.decode("latin-1")) for k, v in headers if not k.startswith(b":")]

    def request(self, method, path, authority, headers=(), body=b""):
        sid = self.h2.get_next_available_stream_id()
        hs = [(":method", method), (":path", path), (":scheme", "https" if TLS else "http"),
              (":authority", authority)] + list(headers)
        if body and not any(k == "content-length" for k, _ in headers):
            hs.append(("content-length", str(len(body))))
        self.streams[sid] = {"status": None, "headers": [], "body": b"", "interim": [], "ended": False, "reset": None}
        self.h2.send_headers(sid, [(k.encode("latin-1"), v.encode("latin-1")) for k, v in hs], end_stream=not body)
        self.flush()
        if body:
            self.send_body(sid, body)
        return sid

    def send_body(self, sid, body, end=True):
        while body:
            room = min(self.h2.local_flow_control_window(sid), self.h2.max_outbound_frame_size, len(body))
            if room <= 0:
                if not self.pump():
                    raise EOFError("connection closed while sending the body")
                if self.streams[sid]["reset"] is not None:
                    return
                continue
            self.h2.send_data(sid, body[:room])
            body = body[room:]
            self.flush()
        if end:
            self.h2.end_stream(sid)
            self.flush()

    def response(self, sid):
        st = self.streams[sid]
        while not st["ended"] and st["reset"] is None:
            if not self.pump():
                raise EOFError("connection closed")
        if st["status"] is None:
            raise EOFError("stream %d reset (%s) without a response" % (sid, st["reset"]))
        r = Response(st["status"], "", st["headers"], st["body"], "HTTP/2")
        r.interim, r.reset, r.trailers = st["interim"], st["reset"], st.get("trailers", [])
        return r

    def close(self):
        try:
            self.h2.close_connection()
            self.flush()
        except Exception:
            pass
        self.c.close()


def h2_headers(lines):
    """HTTP/1-style "Name: value" lines as HTTP/2 fields: lower-case names, no connection-specific ones."""
    out = []
    for l in lines:
        k, _, v = l.partition(":")
        k = k.strip().lower()
        if k in ("connection", "keep-alive", "transfer-encoding", "upgrade", "host", "proxy-connection"):
            continue
        out.append((k, v.strip()))
    return out


class Suite:
    def __init__(self, args):
        u = urlsplit(args.url)
        self.host = u.hostname
        self.port = u.port or 80
        self.prefix = u.path.rstrip("/")
        self.unix = args.unix
        self.limits = dict(kv.split("=") for kv in args.limits.split(",") if kv) if args.limits else {}
        self.timeouts = dict(kv.split("=") for kv in args.timeouts.split(",") if kv) if args.timeouts else {}
        self.host_header = "%s:%d" % (self.host, self.port)
        self.h2c = args.h2c
        self.trailers = args.trailers

    def conn(self, timeout=10):
        if self.h2c:
            raise SkipCase("HTTP/1-only: writes raw HTTP/1.1 bytes on the socket")
        return Conn(self.host, self.port, timeout, self.unix)

    def h2(self, timeout=10):
        return H2Client(self.host, self.port, timeout, self.unix)

    def raw(self, head_lines, body=b"", test=None, method="GET", path="/", extra=()):
        lines = ["%s %s%s HTTP/1.1" % (method, self.prefix, path), "Host: " + self.host_header]
        if test:
            lines.append("X-Csgi-Test: " + test)
        lines += list(head_lines) + list(extra)
        if body and not any(l.lower().startswith(("content-length", "transfer-encoding")) for l in lines):
            lines.append("Content-Length: %d" % len(body))
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body

    def request(self, test=None, method="GET", path="/", headers=(), body=b"", head=False):
        if self.h2c:
            c = self.h2()
            try:
                hs = ([("x-csgi-test", test)] if test else []) + h2_headers(headers)
                return c.response(c.request(method, self.prefix + path, self.host_header, hs, body))
            finally:
                c.close()
        c = self.conn()
        try:
            c.send(self.raw(headers, body, test, method, path, ["Connection: close"]))
            return c.read_response(head=head or method == "HEAD")
        finally:
            c.close()


CASES = []


def case(group, name):
    def deco(fn):
        CASES.append((group, name, fn))
        return fn

    return deco


def expect(cond, note=""):
    if not cond:
        raise AssertionError(note)


# ---------------------------------------------------------------------------------------------------
# core: Plack::Test::Suite's 36 cases, with our own apps. Rule IDs: spec/csgi.md.


@case("core", "01 SCRIPT_NAME equals the mount prefix (ENV-2)")
def _(s):
    r = s.request("script_name")
    expect(r.status == 200 and r.body.decode() == s.prefix, "got %r" % r.body)


@case("core", "02 GET echoes QUERY_STRING (ENV-5)")
def _(s):
    r = s.request("query_string", path="/?name=miyagawa&x=%20y")
    expect(r.body == b"name=miyagawa&x=%20y", "got %r" % r.body)


@case("core", "03 POST urlencoded: CONTENT_LENGTH, CONTENT_TYPE, body (ENV-8)")
def _(s):
    r = s.request("post_urlencoded", "POST", headers=["Content-Type: application/x-www-form-urlencoded"], body=b"name=tatsuhiko")
    expect(r.body == b"14|application/x-www-form-urlencoded|name=tatsuhiko", "got %r" % r.body)


@case("core", "04 big POST (96000 bytes) read in a loop, digest matches (INPUT-1)")
def _(s):
    data = bytes((i * 13) & 0xFF for i in range(96000))
    r = s.request("big_post", "POST", headers=["Content-Type: application/octet-stream"], body=data)
    expect(r.body.decode() == "%d %016x" % (len(data), fnv1a(data)), "got %r" % r.body)


@case("core", "05 csgi.url_scheme is http (https over TLS)")
def _(s):
    got = s.request("url_scheme").body
    expect(got == (b"https" if TLS else b"http"), "got %r" % got)


@case("core", "06 body from a pull stream; close() called (RES-9, ADP-3)")
def _(s):
    tok = uuid.uuid4().hex
    r = s.request("stream_body", headers=["X-Token: " + tok])
    expect(r.body == b"foobarbaz", "got %r" % r.body)
    time.sleep(0.05)
    r2 = s.request("stream_closed", headers=["X-Token: " + tok])
    expect(r2.body == b"closed", "close() not called: %r" % r2.body)


@case("core", "07 file body (open fd) with Content-Length")
def _(s):
    r = s.request("file_fd")
    expect(r.status == 200 and r.header("Content-Length") == str(SMALL_FILE), "headers %r" % r.headers)
    expect(r.body == pattern(SMALL_FILE), "body differs")


@case("core", "08 bigger file body (1.3 MB), digest matches")
def _(s):
    r = s.request("file_big")
    expect(len(r.body) == BIG_FILE, "got %d bytes" % len(r.body))
    expect(hashlib.sha1(r.body).digest() == hashlib.sha1(pattern(BIG_FILE)).digest(), "digest differs")


@case("core", "09 request header Foo becomes HTTP_FOO (ENV-9)")
def _(s):
    expect(s.request("header_foo", headers=["Foo: Bar"]).body == b"Bar")


@case("core", "10 Cookie becomes HTTP_COOKIE")
def _(s):
    expect(s.request("cookie", headers=["Cookie: foo"]).body == b"foo")


@case("core", "11 env: method, SCRIPT_NAME, PATH_INFO /foo/, QUERY_STRING, SERVER_NAME, SERVER_PORT (ENV-1..6)")
def _(s):
    r = s.request("env", path="/foo/?dankogai=kogaidan")
    parts = r.body.decode().split("|")
    expect(parts[:4] == ["GET", s.prefix, "/foo/", "dankogai=kogaidan"], "got %r" % parts)
    expect(parts[4] in (s.host, "localhost") and parts[5] == str(s.port) if not s.unix else True, "server %r" % parts[4:])


@case("core", "12 %2c in the path decodes to ',' in PATH_INFO (ENV-3)")
def _(s):
    expect(s.request("path_info", path="/foo/bar%2cbaz").body == b"/foo/bar,baz")


@case("core", "13 %252c decodes once, to %2c (ENV-3)")
def _(s):
    expect(s.request("path_info", path="/foo/bar%252cbaz").body == b"/foo/bar%2cbaz")


@case("core", "14 raw UTF-8 bytes in the path reach PATH_INFO")
def _(s):
    c = s.conn()
    c.send(("GET %s/foo/\xe3\x81\x82 HTTP/1.1\r\nHost: x\r\nX-Csgi-Test: path_info\r\nConnection: close\r\n\r\n" % s.prefix).encode("latin-1"))
    r = c.read_response()
    c.close()
    expect(r.body == "/foo/\xe3\x81\x82".encode("latin-1"), "got %r" % r.body)


@case("core", "15 SERVER_PROTOCOL is HTTP/1.0 or HTTP/1.1 (HTTP/2 over h2c, ENV-16)")
def _(s):
    got = s.request("server_protocol").body
    expect(got == b"HTTP/2" if s.h2c else re.fullmatch(rb"HTTP/1\.[01]", got), "got %r" % got)


@case("core", "16 SCRIPT_NAME is defined even when empty (ENV-2)")
def _(s):
    expect(s.request("script_name_defined").body == b"defined")


@case("core", "17 stream close() is called after the body was sent (ADP-3)")
def _(s):
    tok = uuid.uuid4().hex
    s.request("stream_body", headers=["X-Token: " + tok])
    time.sleep(0.05)
    expect(s.request("stream_closed", headers=["X-Token: " + tok]).body == b"closed")


@case("core", "18 csgi.errors is present and writable (ERR-1)")
def _(s):
    expect(s.request("errors").body == b"present")


@case("core", "19 status line is '200 OK' and a Date is added (ADP-12)")
def _(s):
    r = s.request("status_line")
    # HTTP/2 has no reason phrase (RFC 9113 §8.3.2).
    expect(r.status == 200 and (s.h2c or r.reason == "OK"), "got %d %r" % (r.status, r.reason))
    expect(re.fullmatch(r"\w{3}, \d\d \w{3} \d{4} \d\d:\d\d:\d\d GMT", r.header("Date") or ""), "Date %r" % r.header("Date"))


@case("core", "20 an app exception gives 500 and the server keeps serving (ADP-5)")
def _(s):
    expect(s.request("die").status == 500)
    expect(s.request("status_line").status == 200, "server stopped serving")


@case("core", "21 a repeated request header is joined with ', ' (ENV-9)")
def _(s):
    expect(s.request("repeated_header", headers=["Foo: bar", "Foo: baz"]).body == b"bar, baz")


@case("core", "22 a repeated response header is sent each time (RES-3)")
def _(s):
    expect(s.request("repeated_response_header").all("X-Foo") == ["bar", "baz"])


@case("core", "23 no bogus COOKIE key in the env")
def _(s):
    expect(s.request("no_cookie_key", headers=["Cookie: a=b"]).body == b"ok")


@case("core", "24 304 has no Content-Type, Content-Length or Transfer-Encoding (ADP-8)")
def _(s):
    r = s.request("not_modified")
    expect(r.status == 304, "status %d" % r.status)
    for h in ("Content-Type", "Content-Length", "Transfer-Encoding"):
        expect(r.header(h) is None, "%s present" % h)


@case("core", "25 REQUEST_URI is raw: /foo/bar%20baz%73?x=a (ENV-4)")
def _(s):
    expect(s.request("request_uri", path="/foo/bar%20baz%73?x=a").body.decode() == s.prefix + "/foo/bar%20baz%73?x=a")


@case("core", "26 file body by path")
def _(s):
    r = s.request("file_path")
    expect(r.body == pattern(SMALL_FILE), "got %d bytes" % len(r.body))


@case("core", "27 a header value longer than 128 bytes passes whole")
def _(s):
    v = "x" * 2000
    expect(s.request("long_header", headers=["X-Long: " + v]).body.decode() == v)


@case("core", "28 delayed response, answered at once and from another thread (RES-8)")
def _(s):
    expect(s.request("delayed").body == b"delayed")
    expect(s.request("delayed_thread").body == b"from another thread")


@case("core", "29 streaming writer from another thread (RES-8)")
def _(s):
    expect(s.request("writer").body == b"one two three")


@case("core", "30 a body holding 'Foo: Bar\\r\\n\\r\\n' stays body")
def _(s):
    body = b"Foo: Bar\r\n\r\nmore"
    expect(s.request("echo", "POST", body=body).body == body)


@case("core", "31 newlines in the body are kept")
def _(s):
    body = b"a\nb\r\nc\n\n"
    expect(s.request("echo", "POST", body=body).body == body)


@case("core", "32 404 passes through")
def _(s):
    expect(s.request("not_found").status == 404)


@case("core", "33 request input readable (and rewindable when csgix.input.buffered)")
def _(s):
    expect(s.request("input_seek", "POST", body=b"hello=world").body == b"hello=world")


@case("core", "34 a body on GET reaches the app")
def _(s):
    expect(s.request("echo", "GET", body=b"body on get").body == b"body on get")


@case("core", "35 Authorization header is passed")
def _(s):
    expect(s.request("authorization", headers=["Authorization: Basic Zm9vOmJhcg=="]).body == b"Basic Zm9vOmJhcg==")


@case("core", "36 //foo///bar/baz is kept in PATH_INFO (ENV-3)")
def _(s):
    expect(s.request("path_info", path="//foo///bar/baz").body == b"//foo///bar/baz")


@case("core", "37 csgi::HttpError from the app gives its status (ADP-6)")
def _(s):
    expect(s.request("http_error").status == 418)


# ---------------------------------------------------------------------------------------------------
# core, canonical paths (ENV-5): dot segments are removed once, after decoding, before any app sees the
# path, so an app mounted at /admin is reached only by a path the front server also saw as /admin.


@case("core", "38 trailers after a stream and a writer body: the body whole, the trailers exact where sent (ADP-17)")
def _(s):
    want = [("grpc-status", "0"), ("server-timing", "app;dur=1")]
    for test, body in (("trailers_stream", b"one two three"), ("trailers_writer", b"one two three"),
                       ("trailers_big", b"x" * 262144)):
        r = s.request(test)
        got = [(k.lower(), v) for k, v in r.trailers]
        expect(r.status == 200 and r.body == body, "%s: %d, %d body bytes" % (test, r.status, len(r.body)))
        expect(r.header("grpc-status") is None, "%s: a trailer field leaked into the head" % test)
        expect(got in ([], want), "%s: trailers %r" % (test, got))
        expect(s.trailers != "sent" or got == want, "%s: no trailers where the protocol carries them" % test)
        expect(s.trailers != "dropped" or not got, "%s: trailers %r where none were expected" % (test, got))


@case("core", "paths: '.' and '..' segments are removed from PATH_INFO (ENV-5)")
def _(s):
    for path, want in (("/a/./b", "/a/b"), ("/a/b/../c", "/a/c"), ("/a/b/..", "/a/"), ("/a/b/.", "/a/b/"),
                       ("/a/%2e%2e/b", "/b"), ("/a/b/%2E%2e", "/a/"), ("/a/.../..b/.c", "/a/.../..b/.c")):
        got = s.request("path_info", path=path).body.decode("latin-1")
        expect(got == want, "%s: got %r, want %r" % (path, got, want))


@case("core", "paths: REQUEST_URI stays the raw target (ENV-5, ENV-6)")
def _(s):
    r = s.request("env", path="/a/%2e%2e/b?x=/..")
    parts = r.body.decode().split("|")
    expect(parts[1:4] == [s.prefix, "/b", "x=/.."], "got %r" % parts)


@case("core", "paths: dot segments never reach the app mounted at /admin (ENV-5)")
def _(s):
    for path, want in (("/admin/x", "admin /x"), ("/admin/users/../..", "site /"), ("/admin/%2e%2e", "site /"),
                       ("/admin/%2e%2e/x", "site /x"), ("/x/../admin/y", "admin /y"), ("/x/%2e%2e/admin", "admin ")):
        r = s.request("mount", path=path)
        got = r.body.decode("latin-1")
        expect(r.status == 200 and got == want, "%s: %d %r, want %r" % (path, r.status, got, want))


@case("core", "paths: a '..' above the root or after '//' is refused, never routed (ENV-5, ADP-10)")
def _(s):
    for path in ("/" + "../" * 12 + "etc/passwd", "/%2e%2e" * 12 + "/admin", "/admin//.."):
        r = s.request("mount", path=path)
        expect(r.status >= 400 and not r.body.startswith((b"site", b"admin")), "%s: %d %r" % (path, r.status, r.body[:60]))


# ---------------------------------------------------------------------------------------------------
# http1: connection handling.


@case("http1", "keep-alive: three requests on one connection")
def _(s):
    c = s.conn()
    for i in range(3):
        c.send(s.raw([], path="/seq/%d" % i))
        r = c.read_response()
        expect(r.body == str(i).encode(), "request %d got %r" % (i, r.body))
    c.close()


@case("http1", "pipelining: 100 requests in one write, 100 responses in order")
def _(s):
    c = s.conn(timeout=20)
    c.send(b"".join(s.raw([], path="/seq/%d" % i) for i in range(100)))
    for i in range(100):
        r = c.read_response()
        expect(r.body == str(i).encode(), "response %d was %r" % (i, r.body))
    c.close()


@case("http1", "pipelining mixes bodies, streams, files and delayed responses in order")
def _(s):
    c = s.conn(timeout=20)
    reqs = [s.raw([], test="echo", method="POST", body=b"posted"), s.raw([], test="stream_body", extra=["X-Token: x"]),
            s.raw([], path="/seq/a"), s.raw([], test="file_fd"), s.raw([], test="delayed"), s.raw([], test="writer"),
            s.raw([], path="/seq/b")]
    c.send(b"".join(reqs))
    want = [b"posted", b"foobarbaz", b"a", pattern(SMALL_FILE), b"delayed", b"one two three", b"b"]
    for i, w in enumerate(want):
        r = c.read_response()
        expect(r.body == w, "response %d was %r" % (i, r.body[:40]))
    c.close()


@case("http1", "half-close after a full request is still answered")
def _(s):
    c = s.conn()
    if TLS:
        raise SkipCase("Python's ssl module cannot half-close a TLS socket and read on (shutdown drops TLS)")
    c.send(s.raw([], path="/seq/half"))
    c.s.shutdown(socket.SHUT_WR)
    r = c.read_response()
    expect(r.body == b"half", "got %r" % r.body)
    c.close()


@case("http1", "Expect: 100-continue: 100 only once the body is read (ADP-15)")
def _(s):
    c = s.conn()
    c.send(s.raw(["Expect: 100-continue", "Content-Length: 5"], test="echo", method="POST"))
    r = c.read_response(interim=True)
    expect(r.status == 100, "expected 100, got %d" % r.status)
    c.send(b"hello")
    r = c.read_response()
    expect(r.status == 200 and r.body == b"hello", "got %r" % r)
    c.close()
    c = s.conn()
    c.send(s.raw(["Expect: 100-continue", "Content-Length: 5"], test="noread", method="POST"))
    r = c.read_response(interim=True)
    if r.status == 100:  # an adapter that reads every body before the app runs
        c.send(b"hello")
        r = c.read_response()
    expect(r.status == 200, "got %d for an app that does not read the body" % r.status)
    c.close()


@case("http1", "an unknown expectation gives 417 (ADP-15)")
def _(s):
    expect(s.request("echo", "POST", headers=["Expect: teapot"], body=b"x").status == 417)


@case("http1", "HEAD: headers with Content-Length, no body; the next response frames right (ADP-2)")
def _(s):
    c = s.conn()
    c.send(s.raw([], test="head", method="HEAD") + s.raw([], path="/seq/after"))
    r = c.read_response(head=True)
    expect(r.status == 200 and r.header("Content-Length") == str(len(b"a body HEAD must not carry")), "%r" % r.headers)
    r2 = c.read_response()
    expect(r2.body == b"after", "HEAD sent a body: next response read %r" % r2.body)
    c.close()


@case("http1", "Connection: close closes after the response (ADP-14)")
def _(s):
    c = s.conn()
    c.send(s.raw(["Connection: close"], path="/seq/1"))
    c.read_response()
    expect(c.closed_by_peer(), "connection stayed open")
    c.close()


@case("http1", "HTTP/1.0 closes by default; keeps alive on Connection: keep-alive")
def _(s):
    c = s.conn()
    c.send(("GET %s/seq/10 HTTP/1.0\r\n\r\n" % s.prefix).encode())
    r = c.read_response()
    expect(r.body == b"10" and c.closed_by_peer(), "1.0 default not closed")
    c.close()
    c = s.conn()
    c.send(("GET %s/seq/1 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n" % s.prefix).encode())
    r = c.read_response()
    c.send(("GET %s/seq/2 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n" % s.prefix).encode())
    r2 = c.read_response()
    expect(r.body == b"1" and r2.body == b"2", "keep-alive 1.0 failed")
    c.close()


@case("http1", "chunked request body is decoded")
def _(s):
    c = s.conn()
    c.send(s.raw(["Transfer-Encoding: chunked"], test="echo", method="POST") + b"5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nTrailer: x\r\n\r\n")
    r = c.read_response()
    expect(r.body == b"hello world", "got %r" % r.body)
    c.send(s.raw([], path="/seq/next"))
    expect(c.read_response().body == b"next", "connection not reusable after a chunked body")
    c.close()


@case("http1", "a stream of unknown length is chunked on HTTP/1.1, close-delimited on 1.0 (ADP-1)")
def _(s):
    r = s.request("chunked_response")
    expect(r.body == b"chunk1 chunk2 chunk3" and "chunked" in (r.header("Transfer-Encoding") or ""), "%r" % r.headers)
    c = s.conn()
    c.send(("GET %s/ HTTP/1.0\r\nX-Csgi-Test: chunked_response\r\n\r\n" % s.prefix).encode())
    r = c.read_response()
    expect(r.body == b"chunk1 chunk2 chunk3" and r.header("Transfer-Encoding") is None, "%r" % r.headers)
    c.close()


@case("http1", "a body the app did not read is skipped; the next request is served (ADP-9)")
def _(s):
    c = s.conn()
    c.send(s.raw([], test="noread", method="POST", body=b"x" * 1000) + s.raw([], path="/seq/next"))
    r = c.read_response()
    r2 = c.read_response()
    expect(r.status == 200 and r2.body == b"next", "got %r then %r" % (r, r2))
    c.close()


@case("http1", "a chunked body the app did not read is skipped; the next request is served (ADP-9)")
def _(s):
    c = s.conn()
    body = b"5;ext=1\r\nhello\r\n00A\r\n0123456789\r\n0\r\nX-Trailer: 1\r\n\r\n"
    c.send(s.raw(["Transfer-Encoding: chunked"], body, test="noread", method="POST") + s.raw([], path="/seq/next"))
    r = c.read_response()
    r2 = c.read_response()
    expect(r.status == 200 and r.header("Connection") is None and r2.body == b"next",
           "got %r then %r" % (r, r2))
    c.close()


@case("http1", "a delayed response never answered gives 500, not a hang (ADP-11)")
def _(s):
    expect(s.request("delayed_dropped").status == 500)
    expect(s.request("delayed_throws").status == 500)


@case("http1", "an exception from a stream's first next() gives 500 (ADP-5)")
def _(s):
    expect(s.request("stream_throws_first").status == 500)


@case("http1", "Writer::write returns false once the client has gone (ADP-4)")
def _(s):
    tok = uuid.uuid4().hex
    c = s.conn()
    c.send(s.raw(["X-Token: " + tok], test="writer_gone"))
    while b"\r\n\r\n" not in c.buf and c._fill():
        pass
    c.s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    c.close()
    deadline = time.time() + 20
    seen = b""
    while time.time() < deadline:
        seen = s.request("writer_gone_check", headers=["X-Token: " + tok]).body
        if seen == b"false seen":
            break
        time.sleep(0.2)
    expect(seen == b"false seen", "write() kept returning true after the client left")


@case("http1", "a writer dropped without close() ends the response as failed (ADP-4)")
def _(s):
    c = s.conn()
    c.send(s.raw([], test="writer_dropped"))
    try:
        c.read_response()
        raise AssertionError("the response ended cleanly")
    except EOFError:
        pass
    expect(b"partial" in c.buf or True)
    c.close()


@case("http1", "a stream or writer past its Content-Length is cut there; the connection closes (ADP-13)")
def _(s):
    for test in ("length_stream_over", "length_writer_over"):
        c = s.conn()
        c.send(s.raw([], test=test) + s.raw([], path="/seq/after"))
        r = c.read_response()
        expect(r.body == b"hello" and r.header("Content-Length") == "5", "%s: %r %r" % (test, r.headers, r.body))
        closed = c.closed_by_peer()
        expect(b"forged" not in c.buf, "%s: the bytes past the length were sent: %r" % (test, c.buf))
        expect(closed and b"HTTP/1." not in c.buf, "%s: the connection went on: %r" % (test, c.buf))
        c.close()


@case("http1", "a stream or writer short of its Content-Length ends the connection (ADP-13)")
def _(s):
    for test in ("length_stream_short", "length_writer_short"):
        c = s.conn()
        c.send(s.raw([], test=test) + s.raw([], path="/seq/after"))
        try:
            r = c.read_response()
            raise AssertionError("%s: a complete response of %d bytes" % (test, len(r.body)))
        except EOFError:
            pass
        expect(c.buf == b"hello", "%s: the short body was followed by %r" % (test, c.buf[5:]))
        c.close()


# ---------------------------------------------------------------------------------------------------
# extensions


@case("extensions", "csgix.cleanup handlers run after the response (EXT-4)")
def _(s):
    tok = uuid.uuid4().hex
    expect(s.request("cleanup", headers=["X-Token: " + tok]).body == b"registered")
    time.sleep(0.05)
    expect(s.request("cleanup_check", headers=["X-Token: " + tok]).body == b"ran")


@case("extensions", "csgix.informational sends 103 Early Hints before the response (EXT-5)")
def _(s):
    if s.h2c:
        r2 = s.request("informational")
        expect(len(r2.interim) == 1 and r2.interim[0].status == 103 and "preload" in (r2.interim[0].header("Link") or ""),
               "interim %r" % r2.interim)
        expect(r2.status == 200 and r2.body == b"sent 103", "final %r" % r2)
        return
    c = s.conn()
    c.send(s.raw(["Connection: close"], test="informational"))
    r = c.read_response(interim=True)
    expect(r.status == 103 and "preload" in (r.header("Link") or ""), "first response %d" % r.status)
    r2 = c.read_response()
    expect(r2.status == 200 and r2.body == b"sent 103", "final %r" % r2)
    c.close()


@case("extensions", "csgix.io: the app takes the connection over (EXT-2)")
def _(s):
    if s.h2c:
        raise SkipCase("csgix.io is absent on HTTP/2 (a stream is not a connection to take; ENV-16)")
    c = s.conn()
    c.send(s.raw(["Connection: Upgrade", "Upgrade: echo"], test="hijack") + b"ping\n")
    r = c.read_response(interim=True)
    expect(r.status == 101, "got %d" % r.status)
    c.closed_by_peer()
    expect(c.buf == b"echo: ping\n", "got %r" % c.buf)
    c.close()


# ---------------------------------------------------------------------------------------------------
# range: Range requests (RFC 9110 §14) answered by the app's csgi::mw::Ranges ("file_ranged": the small
# file with fixed validators) and passed through untouched by every adapter (ADP-16).

RANGED_ETAG = '"csgi-conformance-small"'
RANGED_LAST_MODIFIED = "Mon, 02 Jan 2006 15:04:05 GMT"


def ranged(s, *headers):
    return s.request("file_ranged", headers=list(headers))


@case("range", "single range gives 206 with Content-Range (ADP-16)")
def _(s):
    r = ranged(s, "Range: bytes=100-199")
    expect(r.status == 206 and r.header("Content-Range") == "bytes 100-199/%d" % SMALL_FILE, "%d %r" % (r.status, r.headers))
    # A CGI front may re-frame the body (Apache mod_cgid chunks it); the length is the body's then.
    expect(r.header("Content-Length") in (None, "100"), "Content-Length %r" % r.header("Content-Length"))
    expect(r.body == pattern(SMALL_FILE)[100:200], "wrong slice")


@case("range", "a rangeable 200 says Accept-Ranges: bytes (ADP-16)")
def _(s):
    r = ranged(s)
    expect(r.status == 200 and r.header("Accept-Ranges") == "bytes", "%d %r" % (r.status, r.headers))
    expect(r.body == pattern(SMALL_FILE), "wrong body")


@case("range", "suffix range bytes=-10")
def _(s):
    r = ranged(s, "Range: bytes=-10")
    expect(r.status == 206 and r.body == pattern(SMALL_FILE)[-10:], "%d" % r.status)


@case("range", "several ranges give 206 multipart/byteranges (ADP-16)")
def _(s):
    r = ranged(s, "Range: bytes=0-9, 4000-, 20-29")
    ct = r.header("Content-Type") or ""
    expect(r.status == 206 and ct.startswith("multipart/byteranges; boundary="), "%d %r" % (r.status, r.headers))
    b = ct.split("boundary=", 1)[1].encode()
    data = pattern(SMALL_FILE)
    want = b""
    for first, last in ((0, 9), (20, 29), (4000, SMALL_FILE - 1)):
        want += b"--" + b + b"\r\nContent-Type: application/octet-stream\r\nContent-Range: bytes %d-%d/%d\r\n\r\n" % (
            first, last, SMALL_FILE) + data[first:last + 1] + b"\r\n"
    want += b"--" + b + b"--\r\n"
    expect(r.body == want, "multipart body differs: %r" % r.body[:200])
    expect(r.header("Content-Length") in (None, str(len(want))), "Content-Length %r" % r.header("Content-Length"))


@case("range", "unsatisfiable range gives 416 with bytes */size (ADP-16)")
def _(s):
    r = ranged(s, "Range: bytes=99999-")
    expect(r.status == 416 and r.header("Content-Range") == "bytes */%d" % SMALL_FILE, "%d %r" % (r.status, r.headers))


@case("range", "a malformed Range is ignored (200, whole file)")
def _(s):
    r = ranged(s, "Range: bytes=abc")
    expect(r.status == 200 and r.body == pattern(SMALL_FILE), "%d" % r.status)


@case("range", "If-Range with the strong ETag or the Last-Modified date gives 206 (ADP-16)")
def _(s):
    for v in (RANGED_ETAG, RANGED_LAST_MODIFIED):
        r = ranged(s, "Range: bytes=0-9", "If-Range: " + v)
        expect(r.status == 206 and r.body == pattern(SMALL_FILE)[:10], "If-Range %s: %d" % (v, r.status))


@case("range", "If-Range that does not match (other tag, weak tag, other date) gives 200, whole (ADP-16)")
def _(s):
    for v in ('"other"', "W/" + RANGED_ETAG, "Tue, 03 Jan 2006 15:04:05 GMT"):
        r = ranged(s, "Range: bytes=0-9", "If-Range: " + v)
        expect(r.status == 200 and r.body == pattern(SMALL_FILE), "If-Range %s: %d" % (v, r.status))
        expect(r.header("Content-Range") is None, "Content-Range on a 200")


@case("range", "the adapter does not range a file body the app did not (ADP-16)")
def _(s):
    r = s.request("file_fd", headers=["Range: bytes=0-9"])
    expect(r.status == 200 and r.body == pattern(SMALL_FILE), "%d, %d bytes" % (r.status, len(r.body)))
    expect(r.header("Content-Range") is None and r.header("Accept-Ranges") is None, "%r" % r.headers)


# ---------------------------------------------------------------------------------------------------
# framing: the bad request is refused and the pipelined canary is never answered (RFC 9112).


def framing_case(name, head, body=b"", want=(400,), raw=None):
    @case("framing", name)
    def _(s):
        c = s.conn(timeout=5)
        req = raw(s) if raw else (head(s) if callable(head) else head.replace("{P}", s.prefix).encode("latin-1")) + body
        c.send(req + ("GET %s/canary HTTP/1.1\r\nHost: x\r\n\r\n" % s.prefix).encode())
        try:
            r = c.read_response()
        except (EOFError, ValueError) as e:
            raise AssertionError("no response: %s" % e)
        expect(r.status in want, "status %d, want %s" % (r.status, want))
        closed = c.closed_by_peer()
        expect(b"canary" not in c.buf, "the pipelined canary was answered (request smuggling)")
        expect(closed, "connection left open")
        c.close()


# ADP-10: every case below is a malformed request answered 4xx without reaching the app.
framing_case("TE + Content-Length is refused (RFC 9112 §6.3)",
             "POST {P}/ HTTP/1.1\r\nHost: x\r\nX-Csgi-Test: echo\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", b"0\r\n\r\n")
framing_case("TE not ending in chunked is refused (RFC 9112 §6.3)",
             "POST {P}/ HTTP/1.1\r\nHost: x\r\nX-Csgi-Test: echo\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", b"0\r\n\r\n")
framing_case("TE: gzip alone is refused",
             "POST {P}/ HTTP/1.1\r\nHost: x\r\nX-Csgi-Test: echo\r\nTransfer-Encoding: gzip\r\n\r\n", b"xxxxx")
framing_case("an unknown transfer coding gives 501 (RFC 9112 §6.1)",
             "POST {P}/ HTTP/1.1\r\nHost: x\r\nX-Csgi-Test: echo\r\nTransfer-Encoding: foo, chunked\r\n\r\n", b"0\r\n\r\n", want=(501,))
framing_case("chunked in HTTP/1.0 is refused",
             "POST {P}/ HTTP/1.0\r\nX-Csgi-Test: echo\r\nTransfer-Encoding: chunked\r\n\r\n", b"0\r\n\r\n")
framing_case("differing duplicate Content-Length is refused",
             "POST {P}/ HTTP/1.1\r\nHost: x\r\nX-Csgi-Test: echo\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", b"hello!")
framing_case("missing Host on HTTP/1.1 is refused (RFC 9112 §3.2)", "GET {P}/seq/1 HTTP/1.1\r\n\r\n")
framing_case("repeated Host is refused (RFC 9112 §3.2)", "GET {P}/seq/1 HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n")
framing_case("obs-fold is refused (RFC 9112 §5.2)", "GET {P}/seq/1 HTTP/1.1\r\nHost: x\r\nX-A: a\r\n  folded\r\n\r\n")
framing_case("NUL in a header is refused", "GET {P}/seq/1 HTTP/1.1\r\nHost: x\r\nX-A: a\x00b\r\n\r\n")
framing_case("bare CR in a header is refused", "GET {P}/seq/1 HTTP/1.1\r\nHost: x\r\nX-A: a\rb\r\n\r\n")
framing_case("whitespace before the colon is refused (RFC 9112 §5.1)", "GET {P}/seq/1 HTTP/1.1\r\nHost: x\r\nX-A : b\r\n\r\n")
framing_case("a bad chunk size is refused",
             "POST {P}/ HTTP/1.1\r\nHost: x\r\nX-Csgi-Test: echo\r\nTransfer-Encoding: chunked\r\n\r\n", b"zz\r\nhello\r\n0\r\n\r\n")
framing_case("an unknown HTTP version is refused", "GET {P}/seq/1 HTTP/1.2\r\nHost: x\r\n\r\n", want=(400, 505))
framing_case("%00 in the path is refused", "GET {P}/a%00b HTTP/1.1\r\nHost: x\r\n\r\n")


# ---------------------------------------------------------------------------------------------------
# limits (--limits request_line=N,header_bytes=N,header_count=N,body_bytes=N)


def limit_case(name, key, build, want):
    @case("limits", name)
    def _(s):
        if key not in s.limits:
            raise SkipCase("no --limits %s=N given" % key)
        n = int(s.limits[key])
        c = s.conn(timeout=10)
        try:
            c.send(build(s, n) + ("GET %s/canary HTTP/1.1\r\nHost: x\r\n\r\n" % s.prefix).encode())
        except (BrokenPipeError, ConnectionResetError):
            pass
        r = c.read_response()
        expect(r.status == want, "status %d, want %d" % (r.status, want))
        c.closed_by_peer()
        expect(b"canary" not in c.buf, "canary answered")
        c.close()


limit_case("request line over the limit gives 414", "request_line",
           lambda s, n: ("GET %s/%s HTTP/1.1\r\nHost: x\r\n\r\n" % (s.prefix, "a" * (n + 10))).encode(), 414)
limit_case("header bytes over the limit give 431", "header_bytes",
           lambda s, n: ("GET %s/seq/1 HTTP/1.1\r\nHost: x\r\nX-Big: %s\r\n\r\n" % (s.prefix, "b" * (n + 10))).encode(), 431)
limit_case("header count over the limit gives 431", "header_count",
           lambda s, n: ("GET %s/seq/1 HTTP/1.1\r\nHost: x\r\n%s\r\n" % (s.prefix, "".join("X-H%d: v\r\n" % i for i in range(n + 5)))).encode(), 431)
limit_case("Content-Length over the body limit gives 413", "body_bytes",
           lambda s, n: ("POST %s/ HTTP/1.1\r\nHost: x\r\nX-Csgi-Test: echo\r\nContent-Length: %d\r\n\r\n" % (s.prefix, n + 1)).encode(), 413)


@case("limits", "a chunked body over the body limit gives 413")
def _(s):
    if "body_bytes" not in s.limits:
        raise SkipCase("no --limits body_bytes=N given")
    n = int(s.limits["body_bytes"])
    c = s.conn(timeout=10)
    chunk = b"x" * 8192
    body = b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for _ in range(n // len(chunk) + 2)) + b"0\r\n\r\n"
    try:
        c.send(s.raw(["Transfer-Encoding: chunked"], test="echo", method="POST") + body)
    except (BrokenPipeError, ConnectionResetError):
        pass
    r = c.read_response()
    expect(r.status == 413, "status %d" % r.status)
    c.close()


@case("limits", "csgix.body_limit tells the app the body limit")
def _(s):
    if "body_bytes" not in s.limits:
        raise SkipCase("no --limits body_bytes=N given")
    expect(s.request("body_limit_key").body.decode() == s.limits["body_bytes"])


# ---------------------------------------------------------------------------------------------------
# timeouts (--timeouts header=SECONDS,idle=SECONDS)


@case("timeouts", "a slow request head gets 408 (or a close) within the header timeout")
def _(s):
    if "header" not in s.timeouts:
        raise SkipCase("no --timeouts header=S given")
    t = float(s.timeouts["header"])
    c = s.conn(timeout=t + 5)
    c.send(("GET %s/seq/1 HTTP/1.1\r\nHost: x\r\n" % s.prefix).encode())
    start = time.time()
    closed = c.closed_by_peer(wait=t + 4)
    expect(closed, "still open after %.1fs" % (time.time() - start))
    expect(c.buf == b"" or c.buf.startswith(b"HTTP/1.1 408"), "got %r" % c.buf[:40])
    c.close()


@case("timeouts", "an idle keep-alive connection is closed after the idle timeout")
def _(s):
    if "idle" not in s.timeouts:
        raise SkipCase("no --timeouts idle=S given")
    t = float(s.timeouts["idle"])
    c = s.conn(timeout=t + 5)
    c.send(s.raw([], path="/seq/1"))
    c.read_response()
    expect(c.closed_by_peer(wait=t + 4), "still open")
    c.close()


class SkipCase(Exception):
    pass


def spawn(cmd):
    """Starts a server whose first stdout line says 'listening on URL'; returns (process, url)."""
    p = subprocess.Popen(shlex.split(cmd), stdout=subprocess.PIPE, stderr=None, text=True, start_new_session=True)
    deadline = time.time() + 20
    while time.time() < deadline:
        line = p.stdout.readline()
        if not line:
            break
        m = re.search(r"listening on (\S+)", line)
        if m:
            return p, m.group(1)
    p.kill()
    raise SystemExit("server did not start: %s" % cmd)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", help="base URL of the app, e.g. http://127.0.0.1:8080/prefix")
    ap.add_argument("--spawn", help="command starting the server; it prints 'listening on URL'")
    ap.add_argument("--prefix", default="", help="with --spawn: the mount prefix to append to the URL")
    ap.add_argument("--unix", help="connect to this unix socket instead (Host from --url)")
    ap.add_argument("--groups", default="core,http1,extensions,range,framing,limits,timeouts")
    ap.add_argument("--skip", action="append", default=[], help="CASE-SUBSTRING=reason; repeatable")
    ap.add_argument("--only", help="run only cases whose name contains this")
    ap.add_argument("--limits", default="", help="request_line=N,header_bytes=N,header_count=N,body_bytes=N")
    ap.add_argument("--timeouts", default="", help="header=S,idle=S")
    ap.add_argument("--name", default="", help="adapter name for the table title")
    ap.add_argument("--trailers", choices=("sent", "dropped", "any"), default="any",
                    help="what case 38 requires of trailer fields: sent (HTTP/1.1 chunked, HTTP/2), dropped, or either")
    ap.add_argument("--h2c", action="store_true", help="send every request over HTTP/2 (h2c, prior knowledge)")
    ap.add_argument("--h2", dest="h2c", action="store_true",
                    help="the same; with --tls-ca over TLS, h2 chosen by ALPN")
    ap.add_argument("--tls-ca", help="speak HTTPS/1.1: wrap every socket in TLS, trusting this CA file")
    args = ap.parse_args()
    if args.tls_ca:
        global TLS
        TLS = ssl.create_default_context(cafile=args.tls_ca)
        TLS.options |= ssl.OP_IGNORE_UNEXPECTED_EOF  # a server may close without close_notify
        if args.h2c:
            TLS.set_alpn_protocols(["h2"])
    proc = None
    if args.spawn:
        proc, url = spawn(args.spawn)
        args.url = url.rstrip("/") + args.prefix
    if not args.url:
        ap.error("give --url or --spawn")
    suite = Suite(args)
    groups = args.groups.split(",")
    skips = [s.split("=", 1) + [""] for s in args.skip]
    rows, failed = [], 0
    try:
        for group, name, fn in CASES:
            if group not in groups:
                continue
            if args.only and args.only not in name:
                continue
            skip = next((sk for sk in skips if sk[0] and sk[0] in name), None)
            label = "%s: %s" % (group, name)
            if skip:
                rows.append((label, "skip", skip[1]))
                continue
            try:
                fn(suite)
                rows.append((label, "pass", ""))
            except SkipCase as e:
                rows.append((label, "skip", str(e)))
            except Exception as e:  # a failed expectation or a broken connection
                failed += 1
                rows.append((label, "FAIL", ("%s: %s" % (type(e).__name__, e))[:160]))
    finally:
        if proc:
            # Graceful stop (SIGTERM), as an init system would; the whole process group, workers included.
            os.killpg(proc.pid, 15)
            try:
                rc = proc.wait(15)
                if rc != 0:
                    failed += 1
                    rows.append(("server: exits 0 after SIGTERM", "FAIL", "exit status %d" % rc))
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, 9)
                failed += 1
                rows.append(("server: exits 0 after SIGTERM", "FAIL", "still running 15 s after SIGTERM"))
    width = max(len(r[0]) for r in rows) if rows else 10
    print("conformance%s against %s" % (" (" + args.name + ")" if args.name else "", args.url))
    print("| %-*s | result | note" % (width, "case"))
    for r in rows:
        print("| %-*s | %-6s | %s" % (width, r[0], r[1], r[2]))
    passed = sum(1 for r in rows if r[1] == "pass")
    skipped = sum(1 for r in rows if r[1] == "skip")
    print("%d passed, %d failed, %d skipped" % (passed, failed, skipped))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
