#!/usr/bin/python3
"""`csgi serve --http3` on real sockets, driven by Debian's ngtcp2 client (gtlsclient, package ngtcp2-client):

  * one connection, six streams: a complete body, the env of an HTTP/3 request (SERVER_PROTOCOL HTTP/3,
    https), a pull stream with trailer fields, a 300 KB file (digest), a Writer's 256 KiB from another
    thread with trailers, a delayed response answered from another thread;
  * a request body echoed (csgi.input); one over --max-body-bytes refused 413, a request line over
    --max-request-line refused 414 while the next stream of that connection is served, random datagrams
    dropped; after each, another client is served;
  * Alt-Svc h3=":PORT" on the listener's HTTP/1.1 response; SIGHUP re-reads the certificate files;
  * with the app on a pool and --http3-retry: the client goes through a Retry, the same answers; an app
    call longer than --idle-timeout still answered (keep-alive PINGs while requests are open);
  * a client whose address is never validated gets at most 3x what it sent (anti-amplification);
  * a malformed request reset with H3_MESSAGE_ERROR; no session ticket (no 0-RTT); 60 requests through
    --h2-max-streams 10 (stream credit comes back);
  * --workers 2 --threads 2: connections served by both io threads of both workers, one whose source
    port changes mid-connection served to its end, a Stateless Reset for a connection of a worker killed
    (from its replacement), both new workers serving after SIGHUP;
  * a graceful stop (SIGTERM) ends the process with status 0.
Usage: test_h3.py CSGI_EXE H3_APP_SO"""
import hashlib
import os
import re
import select
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import served  # noqa: E402
from served import check, failures  # noqa: E402

CSGI, APP = sys.argv[1], sys.argv[2]
GTLS = shutil.which("gtlsclient")
TMP = tempfile.mkdtemp(prefix="csgi-h3-")


def make_cert(name="cert", padding=0):
    """A self-signed certificate for localhost; `padding` more names make its handshake flight larger."""
    cert, key = os.path.join(TMP, name + ".pem"), os.path.join(TMP, name + ".key")
    sans = ["DNS:localhost", "IP:127.0.0.1"] + ["DNS:name%03d.padding.example" % i for i in range(padding)]
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                    "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=" + ",".join(sans)],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return cert, key


class Relay:
    """gtlsclient (`extra` arguments, `url`) talking to the server on `port` through this relay, which
    forwards what up(datagram) (client to server) and down(datagram) (server to client) let pass."""

    def __init__(self, port, extra, url):
        self.relay = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.relay.bind(("127.0.0.1", 0))
        self.srv = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.srv.connect(("127.0.0.1", port))
        self.client, self.last = None, b""
        self.cli = subprocess.Popen([GTLS, "-q", "--no-quic-dump", "--no-http-dump", "--timeout=10s"] + extra +
                                    ["127.0.0.1", str(self.relay.getsockname()[1]), url],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def run(self, up, down, log, text):
        """Relays until the error log at `log` says `text` (True) or for 8 s (False)."""
        deadline = time.time() + 8
        while time.time() < deadline:
            ready, _, _ = select.select([self.relay, self.srv], [], [], 0.05)
            for sock in ready:
                if sock is self.relay:
                    data, self.client = self.relay.recvfrom(65536)
                    if up(data):
                        self.srv.send(data)
                else:
                    self.last = self.srv.recv(65536)
                    if self.client and down(self.last):
                        self.relay.sendto(self.last, self.client)
            with open(log) as fh:
                if text in fh.read():
                    return True
        return False

    def answer(self, pkt, wait=0.5):
        """Sends `pkt` to the server as the client; its answer, or None."""
        self.srv.send(pkt)
        ready, _, _ = select.select([self.srv], [], [], wait)
        return self.srv.recv(65536) if ready else None

    def close(self):
        self.cli.kill()
        self.cli.wait()
        self.relay.close()
        self.srv.close()


def stalled_body():
    """A client whose request body stops (a relay holds back its datagrams after the first 30): the
    connection is closed after --body-timeout (logged), as on HTTP/2; a packet of it that comes in the
    closing period is answered with the same CONNECTION_CLOSE (RFC 9000 §10.2.1), one after the period
    with a Stateless Reset (RFC 9000 §10.3); the server serves others."""
    cert, key = make_cert("stall")
    log = os.path.join(TMP, "stall.log")
    srv = served.Server([CSGI, "serve", "--app", APP, "--tls-cert", cert, "--tls-key", key, "--http3",
                         "--body-timeout", "1", "--error-log", log], "https://127.0.0.1:0")
    up = os.path.join(TMP, "stall.bin")
    with open(up, "wb") as fh:
        fh.write(os.urandom(150000))
    r = Relay(srv.port, ["-m", "POST", "-d", up], "https://localhost/echo")
    held = []

    def forward(data):
        if len(held) == 0 and forward.n < 30:
            forward.n += 1
            return True
        held.append(data)
        return False

    forward.n = 0
    closed = r.run(forward, lambda data: True, log, "connection closed (HTTP/3)")
    check(closed, "a request body that stops: the connection is closed after --body-timeout (logged)")
    # What the server sent last (its CONNECTION_CLOSE) may still be on its way to the relay.
    ready, _, _ = select.select([r.srv], [], [], 0.2)
    if ready:
        r.last = r.srv.recv(65536)
    first = r.answer(held[0]) if held else None
    check(first is not None and first == r.last,
          "[ADP-20] a packet in the closing period gets the CONNECTION_CLOSE again (RFC 9000 §10.2.1)")
    time.sleep(1.5)
    reset = r.answer(held[1]) if len(held) > 1 else None
    check(reset is not None and reset != r.last and reset[0] & 0xc0 == 0x40 and 21 <= len(reset) < len(held[1]),
          "after the closing period the connection is gone: a packet of it gets a Stateless Reset, smaller "
          "than the packet")
    r.close()
    hello_served(srv.port, "after a connection closed for a stalled body")
    check(srv.stop() == 0, "that server stops with status 0")


def stalled_reader():
    """A client that stops taking the response (a relay drops what the server sends after its first 12
    datagrams): the connection is closed after --send-timeout (logged), as on HTTP/2."""
    cert, key = make_cert("reader")
    log = os.path.join(TMP, "reader.log")
    srv = served.Server([CSGI, "serve", "--app", APP, "--tls-cert", cert, "--tls-key", key, "--http3",
                         "--send-timeout", "1", "--error-log", log], "https://127.0.0.1:0")
    r = Relay(srv.port, [], "https://localhost/file")
    passed = []
    closed = r.run(lambda data: True, lambda data: len(passed) < 12 and not passed.append(1), log,
                   "took no response bytes for --send-timeout: connection closed")
    check(closed, "a client that stops taking the response: the connection is closed after --send-timeout (logged)")
    r.close()
    hello_served(srv.port, "after a connection closed for a stalled reader")
    check(srv.stop() == 0, "that server stops with status 0")


def amplification():
    """A client whose address is never validated (a relay drops everything the server sends it): before
    each of the client's datagrams, the server has sent at most 3x what it received (RFC 9000 §8.1),
    although its handshake flight (a certificate with 300 names) is larger than that."""
    cert, key = make_cert("big", padding=300)
    srv = served.Server([CSGI, "serve", "--demo", "--tls-cert", cert, "--tls-key", key, "--http3"],
                        "https://127.0.0.1:0")
    relay = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    relay.bind(("127.0.0.1", 0))
    up = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    up.connect(("127.0.0.1", srv.port))
    cli = subprocess.Popen([GTLS, "-q", "--no-quic-dump", "--no-http-dump", "--handshake-timeout=3s", "127.0.0.1",
                            str(relay.getsockname()[1]), "https://localhost/hello"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    received = sent = 0
    within = True
    deadline = time.time() + 4
    while time.time() < deadline:
        ready, _, _ = select.select([relay, up], [], [], 0.1)
        for sock in ready:
            data = sock.recv(65536)
            if sock is relay:
                within = within and sent <= 3 * received
                received += len(data)
                up.send(data)
            else:
                sent += len(data)
    cli.kill()
    cli.wait()
    within = within and sent <= 3 * received
    check(received > 0 and sent > 0 and within,
          "[ADP-20] before validation the server sends at most 3x what it received (%d of %d)" % (sent, received))
    hello = Fetch(srv.port, ["/hello"])
    check(hello.status.get(0) == 200, "a client whose address is validated gets the whole flight and is served")
    relay.close()
    up.close()
    check(srv.stop() == 0, "that server stops with status 0")


class Fetch:
    """One gtlsclient connection with a stream for each path; the bodies land in `dir`, named after the
    path's last segment."""

    def __init__(self, port, paths, extra=(), dump=False):
        self.dir = tempfile.mkdtemp(dir=TMP)
        argv = [GTLS, "--exit-on-all-streams-close", "--timeout=5s", "--download=" + self.dir]
        if not dump:
            argv.append("--no-quic-dump")
        argv += list(extra) + ["127.0.0.1", str(port)] + ["https://localhost:%d%s" % (port, p) for p in paths]
        try:
            r = subprocess.run(argv, capture_output=True, text=True, timeout=30)
            self.rc, self.out = r.returncode, r.stdout + r.stderr
        except subprocess.TimeoutExpired:
            self.rc, self.out = None, ""
        # Stream ids 0, 4, 8, … in the order of the paths.
        self.status = {int(i, 16) // 4: int(s) for i, s in re.findall(r"http: stream 0x([0-9a-f]+) \[:status: (\d+)\]",
                                                                     self.out)}
        self.trailers = re.findall(r"http: stream 0x[0-9a-f]+ \[(grpc-status|server-timing): ([^\]]*)\]", self.out)

    def body(self, name):
        try:
            with open(os.path.join(self.dir, name), "rb") as f:
                return f.read()
        except OSError:
            return None


def threads_of(port, connections, enough):
    """Up to `connections` gtlsclient connections, each asking /pid: the (pid, tid) pairs that answered,
    and how many connections were served fully; it stops early once 12 are and `enough` pairs were seen."""
    seen, served_ok = set(), 0
    for _ in range(connections):
        f = Fetch(port, ["/pid", "/hello"])
        if f.rc == 0 and f.status == {0: 200, 1: 200} and f.body("hello") == b"hello over h3":
            served_ok += 1
            seen.add(tuple(f.body("pid").split(b"/")))
        if served_ok >= 12 and len(seen) >= enough:
            break
    return seen, served_ok


def rebinding(port, every, forget=False):
    """One connection posting 200 KB to /echo through a relay that sends the client's datagrams on from a
    new socket (a new source port, as after a NAT rebinding) every `every` datagrams, and passes back what
    the server sends to any of them (`forget`: only to the newest, the older ones closed, as a NAT that
    forgot the old mapping): whether the body came back whole, and how many source ports were used."""
    relay = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    relay.bind(("127.0.0.1", 0))
    ups, client, sent = [], None, 0
    upload = os.urandom(200000)
    body = os.path.join(TMP, "rebinding.bin")
    with open(body, "wb") as fh:
        fh.write(upload)
    down = tempfile.mkdtemp(dir=TMP)
    cli = subprocess.Popen([GTLS, "-q", "--no-quic-dump", "--no-http-dump", "--exit-on-all-streams-close",
                            "--timeout=5s", "--download=" + down, "-m", "POST", "-d", body, "127.0.0.1",
                            str(relay.getsockname()[1]), "https://localhost:%d/echo" % port],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 10
    while time.time() < deadline:
        # Once the client has exited, what it sent last (its ACKs, CONNECTION_CLOSE) is still passed on.
        exited = cli.poll() is not None
        live = [u for u in ups if u.fileno() >= 0]
        ready, _, _ = select.select([relay] + live, [], [], 0 if exited else 0.05)
        if exited and not ready:
            break
        for sock in ready:
            if sock is relay:
                data, client = relay.recvfrom(65536)
                if sent % every == 0:
                    up = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                    up.connect(("127.0.0.1", port))
                    if forget and ups:
                        ups[-1].close()
                    ups.append(up)
                ups[-1].send(data)
                sent += 1
            else:
                try:
                    data = sock.recv(65536)
                except OSError:
                    continue
                if client:
                    relay.sendto(data, client)
    if cli.poll() is None:
        cli.kill()
    cli.wait()
    for sock in [relay] + ups:
        sock.close()
    try:
        with open(os.path.join(down, "echo"), "rb") as fh:
            echoed = fh.read()
    except OSError:
        echoed = None
    return cli.returncode == 0 and echoed == upload, len(ups)


def children(srv):
    """The master's child processes (its workers), as the pids /pid answers."""
    with open("/proc/%d/task/%d/children" % (srv.p.pid, srv.p.pid)) as fh:
        return {pid.encode() for pid in fh.read().split()}


def reset_after_crash(srv):
    """A worker killed (SIGKILL) after serving a connection; once the master has replaced it, a short-header
    datagram to that connection's ID: whether the new worker answers it with a Stateless Reset carrying
    the token the dead one gave for that ID (smaller than the datagram, as RFC 9000 §10.3 asks)."""
    f = Fetch(srv.port, ["/pid"], dump=True)
    scid = re.search(r"pkt rx pkn=\d+ dcid=0x[0-9a-f]+ scid=0x([0-9a-f]+) version=0x00000001 type=Initial", f.out)
    token = re.search(r"remote transport_parameters stateless_reset_token=0x([0-9a-f]+)", f.out)
    if not (scid and token and f.body("pid")):
        return False
    pid = f.body("pid").split(b"/")[0]
    os.kill(int(pid), signal.SIGKILL)
    for _ in range(100):  # the master reaps it and forks its replacement
        kids = children(srv)
        if pid not in kids and len(kids) == 2:
            break
        time.sleep(0.1)
    datagram = bytes([0x41]) + bytes.fromhex(scid.group(1)) + os.urandom(40)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as u:
        u.settimeout(0.5)
        for _ in range(10):
            u.sendto(datagram, ("127.0.0.1", srv.port))
            try:
                reply = u.recv(2048)
            except socket.timeout:
                continue
            return 21 <= len(reply) < len(datagram) and reply[-16:] == bytes.fromhex(token.group(1))
    return False


def workers(tls):
    """--workers 2 --threads 2: each io thread of each worker its own UDP socket on the port, and each
    connection's datagrams reach the thread that owns it (the connection ID names it), also from a client
    whose source port changes."""
    srv = served.Server([CSGI, "serve"] + tls + ["--workers", "2", "--threads", "2"], "https://127.0.0.1:0")
    seen, served_ok = threads_of(srv.port, 40, 4)
    pids = {pid for pid, tid in seen}
    check(served_ok >= 12 and len(pids) == 2 and len(seen) == 4,
          "--workers 2 --threads 2: every HTTP/3 connection served fully, by both io threads of both workers "
          "(%d served, %d pids, %d threads)" % (served_ok, len(pids), len(seen)))
    echoed, ports = rebinding(srv.port, 10)
    check(echoed and ports >= 10,
          "--workers 2 --threads 2: a connection whose source port changes %d times (200 KB posted) is served to its end"
          % (ports - 1))
    check(reset_after_crash(srv),
          "--workers 2 --threads 2: a worker killed, a datagram of its connection gets a Stateless Reset with "
          "that connection's token from the worker that replaces it")
    # SIGHUP: new workers take new sockets of the group and the new connections; the old ones finish.
    old = children(srv)
    srv.p.send_signal(signal.SIGHUP)
    fresh = set()
    for _ in range(50):
        new, ok = threads_of(srv.port, 1, 1)
        fresh |= {pid for pid, tid in new} - old
        if len(fresh) == 2:
            break
    check(len(fresh) == 2, "--workers 2 --threads 2 after SIGHUP: both new workers serve HTTP/3")
    check(srv.stop() == 0, "--workers 2 --threads 2: a graceful stop ends with status 0")


def log_says(path, text):
    """Whether the error log at `path` comes to say `text` within 5 s."""
    for _ in range(50):
        with open(path) as fh:
            if text in fh.read():
                return True
        time.sleep(0.1)
    return False


def hello_served(port, what):
    f = Fetch(port, ["/hello"])
    check(f.status.get(0) == 200 and f.body("hello") == b"hello over h3", "another client is served " + what)


def http1_alt_svc(port):
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    with socket.create_connection(("127.0.0.1", port), timeout=5) as raw, \
            ctx.wrap_socket(raw, server_hostname="localhost") as s:
        s.sendall(b"GET /hello HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        data = b""
        for _ in range(100):
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    return data.decode("latin-1")


def kinds(srv, big, what):
    f = Fetch(srv.port, ["/early"])
    check(f.body("early") == b"sent 103" and "[:status: 103]" in f.out and "[link: </style.css>" in f.out,
          "[ADP-19] a 103 Early Hints (csgix.informational) before the answer " + what)
    f = Fetch(srv.port, ["/hello", "/env?x=1", "/stream", "/file", "/writer", "/delayed"])
    check(f.rc == 0, "gtlsclient ends cleanly " + what)
    check([f.status.get(i) for i in range(6)] == [200] * 6, "[ADP-19] six streams answered 200 " + what)
    check(f.body("hello") == b"hello over h3", "complete body " + what)
    check(f.body("env?x=1") == b"HTTP/3|https|on|GET|x=1|TLSv1.3|TLS_AES_128_GCM_SHA256|localhost|",
          "[ENV-19] env of an HTTP/3 request (SERVER_PROTOCOL, https, the TLS keys) " + what)
    check(f.body("stream") == b"one two three", "pull stream body " + what)
    check(("grpc-status", "0") in f.trailers and ("server-timing", "app;dur=1") in f.trailers,
          "[ADP-17] pull stream trailer fields " + what)
    body = f.body("file")
    check(body is not None and hashlib.sha256(body).digest() == hashlib.sha256(big).digest(),
          "300 KB file body, digest matches " + what)
    expected = b"".join(bytes([ord("a") + i % 26]) * 4096 for i in range(64))
    check(f.body("writer") == expected, "Writer body from another thread (256 KiB) " + what)
    check(f.trailers.count(("grpc-status", "0")) == 2, "Writer trailer fields " + what)
    check(f.body("delayed") == b"from another thread", "delayed response from another thread " + what)
    upload = os.urandom(100000)
    up = os.path.join(TMP, "up.bin")
    with open(up, "wb") as fh:
        fh.write(upload)
    e = Fetch(srv.port, ["/echo"], ["-m", "POST", "-d", up])
    check(e.status.get(0) == 200 and e.body("echo") == upload, "POST body echoed through csgi.input " + what)


def main():
    if not GTLS:
        print("FAIL gtlsclient (Debian package ngtcp2-client) is not installed")
        return 1
    cert, key = make_cert()
    big = os.urandom(300000)
    big_path = os.path.join(TMP, "big.bin")
    with open(big_path, "wb") as fh:
        fh.write(big)
    os.environ["CSGI_H3_TEST_FILE"] = big_path
    errors = os.path.join(TMP, "errors.log")
    tls = ["--app", APP, "--tls-cert", cert, "--tls-key", key, "--http3", "--error-log", errors]

    srv = served.Server([CSGI, "serve"] + tls + ["--max-body-bytes", "200000"], "https://127.0.0.1:0")
    kinds(srv, big, "(inline)")

    echoed, ports = rebinding(srv.port, 10, forget=True)
    check(echoed and ports >= 10,
          "a connection whose old addresses are gone (%d source ports, 200 KB posted) is answered at its new one "
          "(migration: the path validated, then the answers go there)" % ports)

    reply = http1_alt_svc(srv.port)
    check(reply.startswith("HTTP/1.1 200") and ('alt-svc: h3=":%d"; ma=86400' % srv.port) in reply.lower(),
          "[ADP-18] HTTP/1.1 over TLS says Alt-Svc h3=\":PORT\"")

    up = os.path.join(TMP, "over.bin")
    with open(up, "wb") as fh:
        fh.write(os.urandom(300000))
    f = Fetch(srv.port, ["/echo"], ["-m", "POST", "-d", up])
    check(f.status.get(0) == 413, "[ADP-19] a body over --max-body-bytes is refused 413")
    hello_served(srv.port, "after a 413")

    up = os.path.join(TMP, "two.bin")
    with open(up, "wb") as fh:
        fh.write(os.urandom(150000))
    f = Fetch(srv.port, ["/echo", "/echo"], ["-m", "POST", "-d", up])
    check(sorted(f.status.values()) == [200] and "closed with error code 267" in f.out,
          "[ADP-19] two bodies that fit --max-body-bytes alone but not together on one connection: one is "
          "refused with H3_REQUEST_REJECTED, the other served")

    f = Fetch(srv.port, ["/" + "a/" * 5000, "/hello"])
    check(f.status.get(0) == 414, "[ADP-19] a request line over --max-request-line is refused 414")
    check(f.status.get(1) == 200 and f.body("hello") == b"hello over h3", "the same connection serves the next stream")

    session = os.path.join(TMP, "session.pem")
    f = Fetch(srv.port, ["/hello"], ["--session-file=" + session, "--tp-file=" + os.path.join(TMP, "tp")])
    check(f.status.get(0) == 200 and not os.path.exists(session),
          "[ADP-20] no session ticket is issued, so no 0-RTT can follow")

    f = Fetch(srv.port, ["/hello"], ["-m", "GE T"])
    check(0 not in f.status and "HTTP stream 0 closed with error code 270" in f.out,
          "[ADP-19] a malformed request (a space in :method) is reset with H3_MESSAGE_ERROR")
    hello_served(srv.port, "after a malformed request")

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as u:
        for i in range(200):
            junk = os.urandom(1200)
            if i % 2:  # a long header with a QUIC v1 version and garbage after it
                junk = bytes([0xc0]) + b"\x00\x00\x00\x01" + junk[5:]
            u.sendto(junk, ("127.0.0.1", srv.port))
    hello_served(srv.port, "after 200 junk datagrams")

    # A version the server does not speak: a Version Negotiation packet naming QUIC v1, with the client's
    # connection IDs swapped (RFC 9000 §17.2.1); a datagram under 1200 bytes gets nothing.
    def long_header(dcid, scid):
        return bytes([0xc0]) + b"\x1a\x2a\x3a\x4a" + bytes([len(dcid)]) + dcid + bytes([len(scid)]) + scid

    dcid, scid = os.urandom(8), os.urandom(5)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as u:
        u.settimeout(3)
        u.sendto(long_header(os.urandom(8), os.urandom(5)) + bytes(100), ("127.0.0.1", srv.port))
        initial = long_header(dcid, scid)
        u.sendto(initial + bytes(1200 - len(initial)), ("127.0.0.1", srv.port))
        try:
            vn = u.recv(2048)
        except socket.timeout:
            vn = b""
    expected = b"\x00\x00\x00\x00" + bytes([len(scid)]) + scid + bytes([len(dcid)]) + dcid + b"\x00\x00\x00\x01"
    check(len(vn) > 0 and vn[0] & 0x80 and vn[1:] == expected,
          "[ADP-20] an unknown QUIC version gets a Version Negotiation packet naming v1 (a small datagram none)")
    check(srv.p.poll() is None, "the server is still running")

    # SIGHUP re-reads the certificate files for QUIC too: a broken key is refused and logged, the
    # previous certificates stay; a new certificate is taken.
    with open(key, "rb") as fh:
        good = fh.read()
    with open(key, "w") as fh:
        fh.write("not a key\n")
    srv.p.send_signal(signal.SIGHUP)
    check(log_says(errors, "HTTP/3 certificates not reloaded, the previous ones stay: --tls-cert " + cert),
          "[ADP-18] SIGHUP with a broken key file: logged, the previous certificates stay")
    hello_served(srv.port, "after a refused reload")
    new_cert, new_key = make_cert("renewed")
    shutil.copy(new_cert, cert)
    shutil.copy(new_key, key)
    srv.p.send_signal(signal.SIGHUP)
    hello_served(srv.port, "after a new certificate was loaded")
    check(srv.stop() == 0, "[ADP-20] a graceful stop (SIGTERM) ends with status 0")

    # Stream credit: 10 streams at once, 60 requests on one connection; each closed stream gives one back.
    srv = served.Server([CSGI, "serve"] + tls + ["--h2-max-streams", "10"], "https://127.0.0.1:0")
    f = Fetch(srv.port, ["/hello"], ["-n", "60"])
    check(f.rc == 0 and len(f.status) == 60 and set(f.status.values()) == {200},
          "[ADP-19] 60 requests through 10 concurrent streams on one connection")
    check(srv.stop() == 0, "a graceful stop (SIGTERM) ends with status 0")

    srv = served.Server([CSGI, "serve"] + tls + ["--app-threads", "2", "--http3-retry", "--idle-timeout", "1"],
                        "https://127.0.0.1:0")
    f = Fetch(srv.port, ["/sleep"])
    check(f.status.get(0) == 200 and f.body("sleep") == b"slept",
          "an app call longer than --idle-timeout: the connection is kept alive until it answers")
    f = Fetch(srv.port, ["/hello"], dump=True)
    check(f.status.get(0) == 200 and "type=Retry" in f.out, "[ADP-20] --http3-retry: the client is sent a Retry, then served")
    kinds(srv, big, "(app pool, Retry)")
    check(srv.stop() == 0, "a graceful stop with the app pool ends with status 0")

    workers(tls)
    amplification()
    stalled_body()
    stalled_reader()

    with open(errors) as fh:
        log = fh.read()
    check("internal error" not in log, "no internal error logged")
    shutil.rmtree(TMP, ignore_errors=True)
    print("%d failure(s)" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
