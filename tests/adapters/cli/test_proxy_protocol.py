#!/usr/bin/python3
"""`csgi serve --proxy-protocol --trusted-proxy 127.0.0.1/32` on raw sockets, with the app inline, on
--app-threads 4 and under --workers 2. Connections from 127.0.0.1 are the trusted proxy's; connections bound
to 127.0.0.2 are an untrusted peer's. The demo app's /env page shows the env.
  * v1 TCP4/TCP6 set REMOTE_ADDR, REMOTE_PORT and SERVER_PORT for every request of the connection;
    UNKNOWN keeps the peer's; v2 PROXY with TLVs (PP2_TYPE_SSL: https, HTTPS on), LOCAL keeps the peer's;
  * request bytes in the same packet as the header (pipelined) are served; a header in pieces is waited for;
  * refused and logged with the peer's address: a header from an untrusted peer (text: 400 with the
    reason; binary: closed), malformed v1/v2, a header over the size limit, a trusted connection without
    a header, a header cut short by the peer, a slow header (the header timeout);
  * an untrusted peer without a header is served with its own address;
  * the access log (combined, and the json one of mw::AccessLog) shows the client's address;
  * --trusted-proxy ::1 on [::1] (IPv6 trust), and the usage errors.
Usage: test_proxy_protocol.py CSGI_EXE"""
import html
import json
import os
import re
import socket
import struct
import subprocess
import sys
import tempfile
import time

CSGI = sys.argv[1]
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serving import check, failures  # noqa: E402

V2_SIG = b"\r\n\r\n\x00\r\nQUIT\n"
PENDING = {}  # bytes read past a response, by socket
REQ = b"GET /env HTTP/1.1\r\nHost: t\r\nUser-Agent: probe/1\r\n\r\n"


def start(args, listen="127.0.0.1:0"):
    p = subprocess.Popen([CSGI, "serve", "--demo"] + args + ["--listen", listen], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True)
    deadline = time.time() + 10
    while time.time() < deadline:
        m = re.search(r"listening on http://\[?([^\]]*?)\]?:(\d+)/", p.stdout.readline())
        if m:
            return p, int(m.group(2))
    p.kill()
    raise RuntimeError("csgi did not start")


def stop(p):
    p.terminate()
    try:
        p.wait(timeout=15)
    except subprocess.TimeoutExpired:
        p.kill()


def connect(port, source="127.0.0.1", family=socket.AF_INET, host="127.0.0.1"):
    s = socket.socket(family, socket.SOCK_STREAM)
    s.settimeout(10)
    s.bind((source, 0))
    s.connect((host, port))
    return s


def v2(ver_cmd, fam, block):
    return V2_SIG + bytes([ver_cmd, fam]) + struct.pack(">H", len(block)) + block


def tlv(t, v):
    return bytes([t]) + struct.pack(">H", len(v)) + v


def tcp4_block(src, dst, sport, dport):
    return socket.inet_aton(src) + socket.inet_aton(dst) + struct.pack(">HH", sport, dport)


def read_response(s):
    """(status, head, body) of one response; (0, '', b'') when the connection closed first."""
    data = b""
    while b"\r\n\r\n" not in data:
        try:
            chunk = s.recv(65536)
        except (ConnectionResetError, socket.timeout):
            chunk = b""
        if not chunk:
            return 0, "", b""
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    m = re.search(rb"(?i)content-length: *(\d+)", head)
    n = int(m.group(1)) if m else 0
    while len(body) < n:
        chunk = s.recv(65536)
        if not chunk:
            break
        body += chunk
    PENDING[id(s)] = body[n:]
    return int(head.split()[1]), head.decode(), body[:n]


def env_of(body):
    return {html.unescape(k): html.unescape(v) for k, v in re.findall(r"<tr><td>(.*?)</td><td>(.*?)</td></tr>", body.decode())}


def closed(s):
    """True when the server closes the connection (EOF or reset) without answering."""
    try:
        return s.recv(65536) == b""
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


def drained(s):
    """Reads to the end: True when the server closes the connection (whatever it answered first)."""
    try:
        while s.recv(65536):
            pass
        return True
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


def log_has(path, *words):
    deadline = time.time() + 5
    while time.time() < deadline:
        text = open(path).read() if os.path.exists(path) else ""
        if any(all(w in line for w in words) for line in text.splitlines()):
            return True
        time.sleep(0.05)
    return False


def proxied(port, header, what, want):
    s = connect(port)
    s.sendall(header + REQ)
    status, _, body = read_response(s)
    env = env_of(body)
    got = {k: env.get(k) for k in want}
    check(status == 200 and got == want, "%s: %r (status %d)" % (what, got, status))
    return s, env


def run_mode(mode, tmp):
    err = os.path.join(tmp, "error-%s.log" % mode[0].strip("-") if mode else "error.log")
    acc = os.path.join(tmp, "access-%s.log" % mode[0].strip("-") if mode else "access.log")
    name = " ".join(mode) or "inline"
    p, port = start(["--proxy-protocol", "--trusted-proxy", "127.0.0.1/32", "--error-log", err, "--access-log", acc,
                     "--header-timeout", "1"] + mode)
    try:
        print("-- %s" % name)
        s, env = proxied(port, b"PROXY TCP4 203.0.113.7 198.51.100.1 40001 8443\r\n", "v1 TCP4",
                         {"REMOTE_ADDR": "203.0.113.7", "REMOTE_PORT": "40001", "SERVER_PORT": "8443",
                          "csgi.url_scheme": "http", "HTTPS": None})
        s.sendall(REQ)  # the next request of the connection: the header came once
        status, _, body = read_response(s)
        check(status == 200 and env_of(body).get("REMOTE_ADDR") == "203.0.113.7", "keep-alive: the second request too")
        s.close()
        proxied(port, b"PROXY TCP6 2001:db8::7 2001:db8::1 40002 443\r\n", "v1 TCP6",
                {"REMOTE_ADDR": "2001:db8::7", "REMOTE_PORT": "40002", "SERVER_PORT": "443"})
        s, env = proxied(port, b"PROXY UNKNOWN\r\n", "v1 UNKNOWN keeps the peer's address", {"REMOTE_ADDR": "127.0.0.1"})
        check(env.get("REMOTE_PORT") == str(s.getsockname()[1]) and env.get("SERVER_PORT") == str(port),
              "v1 UNKNOWN: the peer's port and the listener's")
        s.close()

        ssl = tlv(0x20, b"\x01\0\0\0\0" + tlv(0x21, b"TLSv1.3") + tlv(0x22, b"client.example"))
        block = tcp4_block("192.0.2.9", "198.51.100.1", 50000, 443) + tlv(0x01, b"h2") + tlv(0x02, b"example.com") + ssl
        proxied(port, v2(0x21, 0x11, block), "v2 PROXY TCP4 with ALPN, authority and SSL TLVs",
                {"REMOTE_ADDR": "192.0.2.9", "REMOTE_PORT": "50000", "SERVER_PORT": "443", "csgi.url_scheme": "https",
                 "HTTPS": "on"})
        six = (socket.inet_pton(socket.AF_INET6, "2001:db8::9") + socket.inet_pton(socket.AF_INET6, "2001:db8::1") +
               struct.pack(">HH", 50001, 8080))
        proxied(port, v2(0x21, 0x21, six + tlv(0x20, b"\x00\0\0\0\0")), "v2 PROXY TCP6, SSL TLV without TLS",
                {"REMOTE_ADDR": "2001:db8::9", "REMOTE_PORT": "50001", "csgi.url_scheme": "http"})
        s, env = proxied(port, v2(0x20, 0x00, b""), "v2 LOCAL (a health check) keeps the proxy's address",
                         {"REMOTE_ADDR": "127.0.0.1", "SERVER_PORT": str(port)})
        s.close()
        proxied(port, v2(0x21, 0x00, b""), "v2 AF_UNSPEC keeps the peer's address", {"REMOTE_ADDR": "127.0.0.1"})

        # Two requests right behind the header, in one packet; then a header sent in pieces.
        s = connect(port)
        s.sendall(b"PROXY TCP4 203.0.113.8 198.51.100.1 40003 80\r\n" + REQ + REQ.replace(b"/env", b"/env?2"))
        first = read_response(s)
        rest = PENDING.get(id(s), b"")
        check(first[0] == 200 and env_of(first[2]).get("REMOTE_ADDR") == "203.0.113.8", "pipelined: the first request")
        data = rest
        deadline = time.time() + 5
        while b"QUERY_STRING" not in data and time.time() < deadline:
            data += s.recv(65536)
        check(b"<td>QUERY_STRING</td><td>2</td>" in data and b"<td>203.0.113.8</td>" in data,
              "pipelined: the second request, with the client's address")
        s.close()
        s = connect(port)
        header = b"PROXY TCP4 203.0.113.9 198.51.100.1 40004 80\r\n"
        s.sendall(header[:10])
        time.sleep(0.2)
        s.sendall(header[10:] + REQ)
        status, _, body = read_response(s)
        check(status == 200 and env_of(body).get("REMOTE_ADDR") == "203.0.113.9", "a header in two pieces")
        s.close()

        # Refused, each logged with the peer's own address.
        s = connect(port, "127.0.0.2")
        s.sendall(b"PROXY TCP4 203.0.113.66 198.51.100.1 1 2\r\n" + REQ)
        status, head, body = read_response(s)
        check(status == 400 and b"trusted-proxy" in body, "untrusted peer's v1 header: 400 with the reason (%d)" % status)
        check(closed(s), "  and the connection closed")
        check(log_has(err, "refused", "127.0.0.2:%d" % s.getsockname()[1], "not a --trusted-proxy"),
              "  logged with the peer's address")
        s.close()
        s = connect(port, "127.0.0.2")
        s.sendall(v2(0x21, 0x11, tcp4_block("203.0.113.66", "198.51.100.1", 1, 2)) + REQ)
        check(closed(s), "untrusted peer's v2 header: closed")
        check(log_has(err, "refused", "127.0.0.2:%d" % s.getsockname()[1]), "  logged")
        s.close()
        s = connect(port, "127.0.0.2")
        s.sendall(REQ)
        status, _, body = read_response(s)
        check(status == 200 and env_of(body).get("REMOTE_ADDR") == "127.0.0.2",
              "an untrusted peer without a header is served with its own address")
        s.close()

        for what, payload, text in [
                ("malformed v1 (leading zero)", b"PROXY TCP4 203.0.113.07 198.51.100.1 1 2\r\n", True),
                ("malformed v1 (LF alone)", b"PROXY TCP4 203.0.113.7 198.51.100.1 1 2\n", True),
                ("v1 over 107 bytes", b"PROXY UNKNOWN " + b"x" * 120 + b"\r\n", True),
                ("malformed v2 (command 2)", v2(0x22, 0x11, tcp4_block("203.0.113.7", "198.51.100.1", 1, 2)), False),
                ("malformed v2 (truncated TLV)", v2(0x21, 0x11, tcp4_block("203.0.113.7", "198.51.100.1", 1, 2) + b"\x20\x00"), False),
                ("v2 over the size limit", V2_SIG + b"\x21\x11" + struct.pack(">H", 5000), False),
                ("a trusted connection without a header", b"", True)]:
            s = connect(port)
            s.sendall(payload + REQ)
            if text:
                status, head, body = read_response(s)
                check(status == 400 and "close" in head.lower(), "%s: 400 (%d %r)" % (what, status, body[:80]))
            check(closed(s), "%s: closed" % what)
            check(log_has(err, "refused", "127.0.0.1:%d" % s.getsockname()[1]), "%s: logged" % what)
            s.close()

        s = connect(port)
        s.sendall(b"PROXY TCP4 203.0.113.7")
        time.sleep(0.1)
        s.shutdown(socket.SHUT_WR)
        check(drained(s), "a header cut short by the peer: closed")
        check(log_has(err, "127.0.0.1:%d" % s.getsockname()[1], "closed within the PROXY header"), "  logged")
        s.close()
        s = connect(port)
        s.sendall(V2_SIG[:8])
        t0 = time.time()
        check(closed(s) and time.time() - t0 < 5, "a slow header: closed by the header timeout (%.1fs)" % (time.time() - t0))
        check(log_has(err, "127.0.0.1:%d" % s.getsockname()[1], "header timeout"), "  logged")
        s.close()
        s = connect(port)
        s.close()  # a bare TCP check: nothing to log
    finally:
        stop(p)
    lines = open(acc).read().splitlines()
    check(any(l.startswith("203.0.113.7 ") for l in lines) and any(l.startswith("192.0.2.9 ") for l in lines),
          "the access log shows the clients' addresses")
    check(not any(" 127.0.0.2:" in l for l in open(err).read().splitlines() if "203.0.113" in l),
          "the error log names the peer, never the address its header claimed")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        for mode in ([], ["--app-threads", "4"], ["--workers", "2"]):
            run_mode(mode, tmp)

        # mw::AccessLog (json) sees REMOTE_ADDR as the app does.
        log = os.path.join(tmp, "access.json")
        p, port = start(["--proxy-protocol", "--trusted-proxy", "10.9.9.9", "--trusted-proxy", "127.0.0.0/8",
                         "--access-log", log, "--access-log-format", "json"])
        try:
            s, _ = proxied(port, b"PROXY TCP4 203.0.113.5 198.51.100.1 40005 80\r\n", "json access log run",
                           {"REMOTE_ADDR": "203.0.113.5"})
            s.close()
        finally:
            stop(p)
        entries = [json.loads(l) for l in open(log).read().splitlines()]
        check([e.get("remote_addr") for e in entries] == ["203.0.113.5"], "mw::AccessLog: remote_addr is the client's")

        # IPv6: the proxy on ::1.
        try:
            p, port = start(["--proxy-protocol", "--trusted-proxy", "::1/128"], listen="[::1]:0")
        except RuntimeError:
            p = None
            print("skip IPv6: no ::1")
        if p:
            try:
                s = connect(port, "::1", socket.AF_INET6, "::1")
                s.sendall(b"PROXY TCP4 203.0.113.6 198.51.100.1 40006 80\r\n" + REQ)
                status, _, body = read_response(s)
                check(status == 200 and env_of(body).get("REMOTE_ADDR") == "203.0.113.6", "a trusted IPv6 proxy (::1/128)")
                s.close()
            finally:
                stop(p)

    for args, want in [(["--proxy-protocol"], "--trusted-proxy"),
                       (["--trusted-proxy", "10.0.0.0/8"], "--proxy-protocol"),
                       (["--proxy-protocol", "--trusted-proxy", "10.0.0.0/33"], "10.0.0.0/33"),
                       (["--proxy-protocol", "--trusted-proxy", "proxy.example"], "proxy.example")]:
        r = subprocess.run([CSGI, "serve", "--demo"] + args, capture_output=True, text=True, timeout=10)
        check(r.returncode == 2 and want in r.stderr, "usage error for %s: %r" % (" ".join(args), r.stderr.strip()[:120]))

    print("%d failed" % len(failures))
    sys.exit(1 if failures else 0)


main()
