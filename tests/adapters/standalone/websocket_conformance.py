#!/usr/bin/python3
"""WebSocket conformance of `csgi serve` (spec EXT-8…EXT-10) with python3-websockets as the client and raw
sockets for what a client library will not send: echo of text, binary, fragmented and large messages,
ping/pong, keep-alive pings and --ws-idle-timeout, close handshakes with codes both ways, invalid UTF-8 (1007), an unmasked frame (1002), an
over-limit message (1009), a throwing handler (1011), a send from another thread, many clients at once, a
client that vanishes, a bounded send queue, 426 for a bad handshake, a pipelined request before the upgrade, and 1001 on a
graceful stop; plain HTTP is checked between the cases. Then over TLS (wss://, certificates made now by
tls_certs.py): echo, close codes, the size limit (1009), invalid UTF-8 (1007), many clients, 1001 on a stop.
Usage: websocket_conformance.py CSGI_EXE APP_SO [extra csgi serve options...]"""
import asyncio
import base64
import os
import re
import signal
import shutil
import socket
import ssl
import struct
import subprocess
import sys
import tempfile
import time

import websockets

CSGI, APP, EXTRA = sys.argv[1], sys.argv[2], sys.argv[3:]
failures = []
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from fetch import fetch  # noqa: E402
from tls_certs import Certs  # noqa: E402

# While set (over_tls()), every client socket is a TLS one with this context (ALPN http/1.1).
TLS = None


def connect(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    return TLS.wrap_socket(s, server_hostname="localhost") if TLS else s


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)


def start(*options, listen="127.0.0.1:0"):
    err = tempfile.NamedTemporaryFile(prefix="csgi-ws-", suffix=".log", delete=False)
    p = subprocess.Popen([CSGI, "serve", "--app", APP, "--listen", listen] + list(options) + EXTRA,
                         stdout=subprocess.PIPE, stderr=err, text=True, start_new_session=True)
    deadline = time.time() + 15
    while time.time() < deadline:
        line = p.stdout.readline()
        m = re.search(r"listening on https?://127.0.0.1:(\d+)/", line or "")
        if m:
            return p, int(m.group(1)), err.name
        if not line:
            break
    p.kill()
    raise SystemExit("server did not start")


def http(port, path="/hello", extra=""):
    return fetch(port, path, headers=extra, sock=connect(port)).decode("latin-1")


def serving(port):
    return http(port).endswith("hello")


def raw_upgrade(port, path="/echo", before=b""):
    """A handshake on a raw socket; returns (socket, bytes after the 101 head)."""
    s = connect(port)
    key = base64.b64encode(os.urandom(16)).decode()
    s.sendall(before + ("GET %s HTTP/1.1\r\nHost: t\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                        "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n" % (path, key)).encode())
    data = b""
    while True:
        i = data.find(b"HTTP/1.1 101")
        if i >= 0 and data.find(b"\r\n\r\n", i) >= 0:
            break
        d = s.recv(65536)
        if not d:
            break
        data += d
    i = data.find(b"HTTP/1.1 101")
    j = data.find(b"\r\n\r\n", i)
    return s, data[:j + 4], data[j + 4:]


def origin_answer(port, origin=None, host="t"):
    """A handshake for /echo with `origin` (None: no Origin field); returns the response head and body read
    until the head of a 101 or the end of a refusal."""
    s = connect(port)
    key = base64.b64encode(os.urandom(16)).decode()
    s.sendall(("GET /echo HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n%s"
               "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n"
               % (host, "" if origin is None else "Origin: %s\r\n" % origin, key)).encode())
    data = b""
    deadline = time.time() + 5
    while time.time() < deadline:
        head_end = data.find(b"\r\n\r\n")
        if head_end >= 0:
            if data.startswith(b"HTTP/1.1 101"):
                break
            m = re.search(rb"(?i)\r\ncontent-length: *(\d+)", data[:head_end])
            if not m or len(data) >= head_end + 4 + int(m.group(1)):
                break
        d = s.recv(65536)
        if not d:
            break
        data += d
    s.close()
    return data.decode("latin-1")


def origins():
    """Browsers' Origin: same origin only by default (403 with the reason otherwise), no Origin allowed,
    --ws-allowed-origin adds origins."""
    p, port, errlog = start()
    try:
        r = origin_answer(port, "http://evil.example")
        check(r.startswith("HTTP/1.1 403") and "Origin http://evil.example" in r,
              "cross-origin browser handshake: 403 with the reason (%r)" % r[:80])
        check(origin_answer(port, "http://t").startswith("HTTP/1.1 101"), "same-origin handshake: 101")
        check(origin_answer(port, "https://t:443", host="t").startswith("HTTP/1.1 101"),
              "same origin, default port written out: 101")
        check(origin_answer(port, "http://t:8080").startswith("HTTP/1.1 403"), "same host, another port: 403")
        check(origin_answer(port, "null").startswith("HTTP/1.1 403"), "Origin null: 403")
        check(origin_answer(port).startswith("HTTP/1.1 101"), "no Origin (not a browser): 101")
        check(serving(port), "plain HTTP served after the refusals")
    finally:
        os.killpg(p.pid, signal.SIGTERM)
        p.wait(10)
        os.unlink(errlog)
    p, port, errlog = start("--ws-allowed-origin", "https://app.example", "--ws-allowed-origin", "http://localhost:3000")
    try:
        check(origin_answer(port, "https://app.example").startswith("HTTP/1.1 101"), "a listed origin: 101")
        check(origin_answer(port, "http://localhost:3000").startswith("HTTP/1.1 101"), "another listed origin: 101")
        check(origin_answer(port, "http://t").startswith("HTTP/1.1 101"), "with a list, the same origin still: 101")
        check(origin_answer(port, "https://evil.example").startswith("HTTP/1.1 403"), "an unlisted origin: 403")
    finally:
        os.killpg(p.pid, signal.SIGTERM)
        p.wait(10)
        os.unlink(errlog)


def frame(opcode, payload, mask=True):
    head = bytes([0x80 | opcode])
    n = len(payload)
    m = 0x80 if mask else 0
    if n < 126:
        head += bytes([m | n])
    elif n < 65536:
        head += bytes([m | 126]) + struct.pack("!H", n)
    else:
        head += bytes([m | 127]) + struct.pack("!Q", n)
    if not mask:
        return head + payload
    key = os.urandom(4)
    return head + key + bytes(b ^ key[i % 4] for i, b in enumerate(payload))


def read_close_code(s, rest=b""):
    """Reads frames until a close frame; returns its code (None if the connection ended without one)."""
    buf = rest
    deadline = time.time() + 5
    while time.time() < deadline:
        while len(buf) >= 2:
            n = buf[1] & 0x7f
            off = 2
            if n == 126:
                n, off = struct.unpack("!H", buf[2:4])[0], 4
            elif n == 127:
                n, off = struct.unpack("!Q", buf[2:10])[0], 10
            if len(buf) < off + n:
                break
            op, payload = buf[0] & 0x0f, buf[off:off + n]
            buf = buf[off + n:]
            if op == 8:
                return struct.unpack("!H", payload[:2])[0] if len(payload) >= 2 else 1005
        try:
            d = s.recv(65536)
        except OSError:
            return None
        if not d:
            return None
        buf += d
    return None


def pipelined_upgrade(port, label):
    """A request pipelined before the upgrade is answered first; the WebSocket echoes after it."""
    s, head, rest = raw_upgrade(port, before=b"GET /hello HTTP/1.1\r\nHost: t\r\n\r\n")
    check(head.startswith(b"HTTP/1.1 200") and b"hello" in head, label + "a pipelined request is answered before the 101")
    s.sendall(frame(1, b"after pipelining"))
    data = rest
    while b"after pipelining" not in data:
        d = s.recv(65536)
        if not d:
            break
        data += d
    check(b"after pipelining" in data, label + "echo after a pipelined upgrade")
    s.close()


def events(port):
    return http(port, "/events").split("\r\n\r\n", 1)[1]


def client_ssl():
    return {"ssl": TLS} if TLS else {}


async def echo_cases(url):
    async with websockets.connect(url + "/echo", max_size=None, **client_ssl()) as ws:
        await ws.send("héllo")
        check(await ws.recv() == "héllo", "text echo")
        await ws.send(b"\x00\x01\xff")
        check(await ws.recv() == b"\x00\x01\xff", "binary echo")
        await ws.send(["frag", "men", "ted ✓"])
        check(await ws.recv() == "fragmented ✓", "fragmented text reassembled")
        await ws.send([b"ab", b"cd"])
        check(await ws.recv() == b"abcd", "fragmented binary reassembled")
        big = os.urandom(4 << 20)
        await ws.send(big)
        check(await ws.recv() == big, "4 MiB binary echo")
        text = "x" * (1 << 20)
        await ws.send(text)
        check(await ws.recv() == text, "1 MiB text echo")
        await ws.send("")
        check(await ws.recv() == "", "empty message echo")
        pong = await ws.ping(b"are you there")
        await asyncio.wait_for(pong, 5)
        check(True, "ping answered with pong")
        await ws.close(4000, "bye now")
        check(ws.close_code == 4000, "client close 4000 echoed by the server (got %s)" % ws.close_code)


async def close_codes(url):
    async with websockets.connect(url + "/close", **client_ssl()) as ws:
        await ws.send("4001 done here")
        try:
            await asyncio.wait_for(ws.recv(), 5)
            check(False, "server close with a code")
        except websockets.ConnectionClosed as e:
            check(e.rcvd is not None and e.rcvd.code == 4001 and e.rcvd.reason == "done here",
                  "server closes with the app's code and reason (got %s)" % (e.rcvd,))


async def expect_close(url, send, code, what, max_size=None):
    async with websockets.connect(url, max_size=max_size, **client_ssl()) as ws:
        try:
            await ws.send(send)  # the server may close as soon as it sees the frame's length
            await asyncio.wait_for(ws.recv(), 5)
            check(False, what)
        except websockets.ConnectionClosed as e:
            check(e.rcvd is not None and e.rcvd.code == code, "%s (got %s)" % (what, e.rcvd))


async def from_thread(url):
    async with websockets.connect(url + "/thread") as ws:
        check(await asyncio.wait_for(ws.recv(), 5) == "from a thread", "send from another thread")


async def many(url, n=200, k=10):
    async def one(i):
        async with websockets.connect(url + "/echo", open_timeout=20, **client_ssl()) as ws:
            for j in range(k):
                msg = "client %d message %d" % (i, j)
                await ws.send(msg)
                if await ws.recv() != msg:
                    return False
        return True
    results = await asyncio.gather(*(one(i) for i in range(n)), return_exceptions=True)
    ok = sum(1 for r in results if r is True)
    check(ok == n, "%d clients at once, %d messages each: %d echoed all" % (n, k, ok))


def idle_timeout():
    """--ws-idle-timeout: a client that answers pings stays, one that does not is closed."""
    p, port, errlog = start("--ws-idle-timeout", "1")
    try:
        s, head, rest = raw_upgrade(port)
        t0 = time.time()
        data, pinged = rest, False
        while time.time() - t0 < 5:
            s.settimeout(max(0.1, 5 - (time.time() - t0)))
            try:
                d = s.recv(65536)
            except OSError:
                break
            if not d:
                break
            data += d
            pinged = pinged or (len(data) >= 1 and data[0] & 0x0f == 9)
        waited = time.time() - t0
        check(pinged and 0.8 < waited < 4, "a silent client is pinged, then dropped after --ws-idle-timeout (%.1f s)" % waited)
        s.close()

        async def lively():
            async with websockets.connect("ws://127.0.0.1:%d/echo" % port, ping_interval=None) as ws:
                await asyncio.sleep(2.5)  # the library answers the server's pings
                await ws.send("still here")
                return await asyncio.wait_for(ws.recv(), 5)
        check(asyncio.run(lively()) == "still here", "a client that answers pings outlives --ws-idle-timeout")
    finally:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        os.unlink(errlog)


def main():
    origins()
    idle_timeout()
    access = tempfile.NamedTemporaryFile(prefix="csgi-ws-access-", delete=False).name
    p, port, errlog = start("--ws-max-message-bytes", "8388608", "--graceful-timeout", "5", "--ws-send-queue-bytes",
                            "1048576", "--access-log", access)
    url = "ws://127.0.0.1:%d" % port
    try:
        check(serving(port), "plain HTTP served")
        r = http(port, "/echo")
        check(r.startswith("HTTP/1.1 426") and "\r\nUpgrade: websocket\r\n" in r, "plain GET to a WebSocket route: 426 with Upgrade")
        r = http(port, "/echo", "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: "
                                "dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 8\r\n")
        check(r.startswith("HTTP/1.1 426") and "Sec-WebSocket-Version: 13" in r, "wrong version: 426 with Sec-WebSocket-Version: 13")

        asyncio.run(echo_cases(url))
        time.sleep(0.2)
        check("close 4000 bye now" in events(port), "on_close got the client's 4000 and reason")
        asyncio.run(close_codes(url))
        asyncio.run(expect_close(url + "/small", "y" * 2000, 1009, "message over the handler's limit: 1009"))
        asyncio.run(expect_close(url + "/echo", b"z" * (9 << 20), 1009, "message over --ws-max-message-bytes: 1009"))
        asyncio.run(expect_close(url + "/throw", "x", 1011, "a throwing handler: 1011"))
        time.sleep(0.2)
        with open(errlog) as f:
            check("WebSocket handler threw" in f.read(), "the throw is logged to csgi.errors")
        asyncio.run(from_thread(url))

        async def flood():
            async with websockets.connect(url + "/flood", max_size=None) as ws:
                await ws.send("400")  # 25 MiB against a 1 MiB send queue
                got = 0
                try:
                    while True:
                        await asyncio.wait_for(ws.recv(), 1)
                        got += 1
                except asyncio.TimeoutError:
                    pass
                return got
        got = asyncio.run(flood())
        m = re.search(r"flood refused (\d+) queued (\d+)", events(port))
        check(m is not None and int(m.group(1)) > 0 and int(m.group(2)) <= (1 << 20) and got == 400 - int(m.group(1)),
              "send queue bounded by --ws-send-queue-bytes: refused %s, most queued %s, received %d" %
              (m and m.group(1), m and m.group(2), got))
        check(serving(port), "HTTP still served")

        s, head, rest = raw_upgrade(port)
        check(b"Sec-WebSocket-Accept:" in head and b"Beast" not in head, "handshake response from a raw socket")
        s.sendall(frame(1, b"ok \xff\xfe bad"))
        check(read_close_code(s, rest) == 1007, "invalid UTF-8 in a text frame: 1007")
        s.close()
        s, head, rest = raw_upgrade(port)
        s.sendall(frame(1, b"no mask", mask=False))
        check(read_close_code(s, rest) == 1002, "unmasked client frame: 1002")
        s.close()
        pipelined_upgrade(port, "")

        hs = ("Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
              "Sec-WebSocket-Version: 13\r\n")
        s, head, rest = raw_upgrade(port, before=("GET /taken-then-delayed HTTP/1.1\r\nHost: t\r\n%s\r\n" % hs).encode())
        check(b"delayed" in head and b"HTTP/1.1 101" in head,
              "a handler taken but answered otherwise does not outlive its request: the next upgrade on the connection works")
        s.close()

        s, head, rest = raw_upgrade(port)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.close()  # vanishes: a reset, no close frame
        time.sleep(0.3)
        check("close 1006" in events(port), "a client that vanishes: on_close with 1006")
        check(serving(port), "HTTP still served after the vanished client")

        asyncio.run(many(url))
        check(serving(port), "HTTP still served after many clients")

        async def stop_case():
            async with websockets.connect(url + "/echo") as ws:
                await ws.send("before stop")
                await ws.recv()
                os.killpg(p.pid, signal.SIGTERM)
                try:
                    await asyncio.wait_for(ws.recv(), 5)
                    check(False, "graceful stop closes with 1001")
                except websockets.ConnectionClosed as e:
                    check(e.rcvd is not None and e.rcvd.code == 1001, "graceful stop closes with 1001 (got %s)" % (e.rcvd,))
        asyncio.run(stop_case())
        check(p.wait(10) == 0, "the server exits 0 after the stop")
        with open(access) as f:
            log = f.read()
        check('"GET /echo HTTP/1.1" 101 ' in log, "the access log has the upgrade request with status 101")
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
        os.unlink(errlog)
        os.unlink(access)
    certs = Certs()
    try:
        over_tls(certs)
    finally:
        shutil.rmtree(certs.dir, ignore_errors=True)
    if failures:
        print("%d failed" % len(failures))
        sys.exit(1)
    print("all passed")


def over_tls(certs):
    """wss://: the same sessions over the connection's TLS stream."""
    global TLS
    TLS = ssl.create_default_context(cafile=certs.ca)
    TLS.set_alpn_protocols(["http/1.1"])
    p, port, errlog = start("--tls-cert", certs.server[0], "--tls-key", certs.server[1], "--ws-max-message-bytes",
                            "8388608", "--graceful-timeout", "5", listen="https://127.0.0.1:0")
    url = "wss://localhost:%d" % port
    try:
        check(serving(port), "TLS: HTTPS served")
        asyncio.run(echo_cases(url))
        time.sleep(0.2)
        check("close 4000 bye now" in events(port), "TLS: on_close got the client's 4000 and reason")
        asyncio.run(close_codes(url))
        asyncio.run(expect_close(url + "/small", "y" * 2000, 1009, "TLS: message over the handler's limit: 1009"))
        asyncio.run(expect_close(url + "/echo", b"z" * (9 << 20), 1009, "TLS: message over --ws-max-message-bytes: 1009"))
        s, head, rest = raw_upgrade(port)
        check(b"Sec-WebSocket-Accept:" in head, "TLS: handshake response on a raw TLS socket")
        s.sendall(frame(1, b"ok \xff\xfe bad"))
        check(read_close_code(s, rest) == 1007, "TLS: invalid UTF-8 in a text frame: 1007")
        s.close()
        pipelined_upgrade(port, "TLS: ")
        asyncio.run(many(url, n=50))
        check(serving(port), "TLS: HTTPS still served after the WebSockets")

        async def stop_case():
            async with websockets.connect(url + "/echo", ssl=TLS) as ws:
                await ws.send("before stop")
                await ws.recv()
                os.killpg(p.pid, signal.SIGTERM)
                try:
                    await asyncio.wait_for(ws.recv(), 5)
                    check(False, "TLS: graceful stop closes with 1001")
                except websockets.ConnectionClosed as e:
                    check(e.rcvd is not None and e.rcvd.code == 1001, "TLS: graceful stop closes with 1001 (got %s)" % (e.rcvd,))
        asyncio.run(stop_case())
        check(p.wait(10) == 0, "TLS: the server exits 0 after the stop")
    finally:
        TLS = None
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
        os.unlink(errlog)


main()
