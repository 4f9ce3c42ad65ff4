"""The ASGI websocket scope on `csgi serve --asgi`: a Starlette app (ws_site.py) under csgi and under
uvicorn, the same client script against both, transcripts compared and checked: echo of text and bytes,
subprotocol choice, 200 messages in order, a 1 MiB message, the scope, a refusal before accepting (403),
an app that raises or returns before answering (500), one that raises after accepting (1011), a server
close with a code and reason, extra handshake headers, and the client's close code reaching the app."""
import asyncio
import http.client
import json
import os
import ssl
import subprocess
import sys
import time

import pytest

from conftest import HERE, PYTHON, free_port

websockets = pytest.importorskip("websockets")
pytest.importorskip("starlette")


async def opened(url, **kw):
    try:
        async with websockets.connect(url, **kw):
            return "opened"
    except websockets.exceptions.InvalidStatusCode as e:
        return e.status_code


async def until_closed(ws):
    """The messages received until the connection closed, and its close code and reason."""
    got = []
    try:
        while True:
            got.append(await ws.recv())
    except websockets.exceptions.ConnectionClosed as e:
        return got + [(e.code, e.reason)]


def last_close(port):
    deadline = time.monotonic() + 5
    while True:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        c.request("GET", "/last")
        text = c.getresponse().read().decode()
        c.close()
        if text != "none" or time.monotonic() > deadline:
            return text
        time.sleep(0.05)


async def transcript(port):
    base = "ws://127.0.0.1:%d" % port
    out = {}
    async with websockets.connect(base + "/echo", subprotocols=["x", "chat"], max_size=None) as ws:
        out["subprotocol"] = ws.subprotocol
        await ws.send("hello")
        await ws.send("caf\u00e9 \u2713")
        await ws.send(b"\x00\x01abc")
        out["echo"] = [await ws.recv() for _ in range(3)]
        for i in range(200):
            await ws.send("m%d" % i)
        out["in order"] = [await ws.recv() for _ in range(200)] == ["echo:m%d" % i for i in range(200)]
        big = bytes(range(256)) * 4096
        await ws.send(big)
        out["1 MiB"] = await ws.recv() == big[::-1]
    async with websockets.connect(base + "/echo") as ws:
        out["no subprotocol"] = ws.subprotocol
    async with websockets.connect(base + "/scope?a=1&b=%20x", subprotocols=["p1", "p2"],
                                  extra_headers={"X-Custom": "v1"}) as ws:
        out["scope"] = json.loads(await ws.recv())
    for path in ("/refuse", "/no-answer", "/raise-first"):
        out[path] = await opened(base + path)
    async with websockets.connect(base + "/raise-after") as ws:
        out["raise-after"] = await until_closed(ws)
    async with websockets.connect(base + "/server-close") as ws:
        out["server-close"] = await until_closed(ws)
    async with websockets.connect(base + "/headers") as ws:
        out["headers"] = [ws.response_headers.get("x-extra"), await ws.recv()]
    ws = await websockets.connect(base + "/record")
    await ws.close(code=4002, reason="done")
    out["record"] = await asyncio.get_running_loop().run_in_executor(None, last_close, port)
    return out


EXPECTED = {
    "subprotocol": "chat",
    "echo": ["echo:hello", "echo:caf\u00e9 \u2713", b"cba\x01\x00"],
    "in order": True,
    "1 MiB": True,
    "no subprotocol": None,
    "scope": {"type": "websocket", "path": "/scope", "query_string": "a=1&b=%20x", "raw_path": "/scope",
              "root_path": "", "scheme": "ws", "subprotocols": ["p1", "p2"], "x-custom": ["v1"]},
    "/refuse": 403,
    "/no-answer": 500,
    "/raise-first": 500,
    "raise-after": ["about to fail", (1011, "")],  # uvicorn: the connection dropped, no close frame
    "server-close": ["bye", (4001, "custom")],
    "headers": ["yes", "with headers"],
    "record": "4002 done",
}


def test_websocket_scope_on_csgi_matches_uvicorn(server_factory, csgi_bin, tmp_path):
    pytest.importorskip("uvicorn")
    p1, p2 = free_port(), free_port()
    csgi = server_factory([csgi_bin, "serve", "--asgi", "ws_site:app", "--listen", "127.0.0.1:%d" % p1], p1,
                          cwd=HERE)
    server_factory([PYTHON, "-m", "uvicorn", "ws_site:app", "--port", str(p2), "--log-level", "warning"], p2,
                   cwd=HERE)
    got = asyncio.run(asyncio.wait_for(transcript(p1), 60))
    theirs = asyncio.run(asyncio.wait_for(transcript(p2), 60))
    # An app raising after accepting: csgi sends what was queued and closes with 1011 (RFC 6455 "internal
    # error"); uvicorn drops the connection without a close frame (1006). Compared apart.
    assert theirs.pop("raise-after")[-1][0] == 1006
    # The client's close reason: csgi passes it in websocket.disconnect (ASGI spec 2.4's "reason"); this
    # uvicorn passes the code only.
    assert theirs.pop("record").split(" ")[0] == "4002"
    assert got == dict(theirs, **{"raise-after": got["raise-after"], "record": got["record"]}), "csgi %r\nuvicorn %r\n--- csgi log:\n%s" % (got, theirs, csgi.output()[-3000:])
    assert got == EXPECTED
    log = csgi.output()
    assert "refused by raising" in log and "failed after accepting" in log
    assert "returned without answering a WebSocket handshake" in log


def test_websocket_scope_with_app_threads_and_workers(server_factory, csgi_bin):
    port = free_port()
    server_factory([csgi_bin, "serve", "--asgi", "ws_site:app", "--listen", "127.0.0.1:%d" % port,
                    "--workers", "2", "--app-threads", "4"], port, cwd=HERE)

    async def clients():
        async def one(i):
            async with websockets.connect("ws://127.0.0.1:%d/echo" % port) as ws:
                for j in range(20):
                    await ws.send("c%d-%d" % (i, j))
                    assert await ws.recv() == "echo:c%d-%d" % (i, j)
                return i
        return await asyncio.gather(*(one(i) for i in range(20)))

    assert asyncio.run(asyncio.wait_for(clients(), 60)) == list(range(20))


def test_an_app_that_does_not_read_is_closed_with_1011(server_factory, csgi_bin):
    port = free_port()
    csgi = server_factory([csgi_bin, "serve", "--asgi", "ws_site:app", "--listen", "127.0.0.1:%d" % port],
                          port, cwd=HERE)

    async def flood():
        async with websockets.connect("ws://127.0.0.1:%d/no-read" % port) as ws:
            chunk = b"x" * (1 << 20)
            try:
                for _ in range(40):
                    await ws.send(chunk)
                await ws.recv()
            except websockets.exceptions.ConnectionClosed as e:
                return e.code

    assert asyncio.run(asyncio.wait_for(flood(), 60)) == 1011
    assert "does not read its WebSocket messages" in csgi.output()
    assert csgi.request("GET", "/last")[0] == 200  # and the server goes on


def test_websocket_scope_over_tls(server_factory, csgi_bin, tmp_path):
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
                    "-days", "2", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True)
    port = free_port()
    server_factory([csgi_bin, "serve", "--asgi", "ws_site:app", "--listen", "https://127.0.0.1:%d" % port,
                    "--tls-cert", str(cert), "--tls-key", str(key)], port, cwd=HERE)
    ctx = ssl.create_default_context(cafile=str(cert))

    async def client():
        base = "wss://127.0.0.1:%d" % port
        async with websockets.connect(base + "/echo", ssl=ctx, subprotocols=["chat"]) as ws:
            await ws.send("over tls")
            echo = (await ws.recv(), ws.subprotocol)
        async with websockets.connect(base + "/scope", ssl=ctx) as ws:
            scheme = json.loads(await ws.recv())["scheme"]
        return echo, scheme

    assert asyncio.run(asyncio.wait_for(client(), 60)) == (("echo:over tls", "chat"), "wss")


def test_websocket_over_http2_is_the_same_scope(server_factory, csgi_bin):
    """RFC 8441 (spec EXT-11): an extended CONNECT on an h2c stream reaches the app as the websocket scope
    the HTTP/1.1 handshake gives (subprotocol, echo, scope keys); the stream is answered 200."""
    pytest.importorskip("h2")
    sys.path.insert(0, os.path.join(HERE, "..", "adapters", "standalone"))
    from h2_ws_client import TEXT, Conn, frame
    port = free_port()
    server_factory([csgi_bin, "serve", "--asgi", "ws_site:app", "--listen", "127.0.0.1:%d" % port], port, cwd=HERE)
    c = Conn(port)
    try:
        sid = c.open("/echo", extra=[("sec-websocket-protocol", "chat")])
        assert c.streams[sid]["status"] == 200
        assert c.streams[sid]["headers"].get(b"sec-websocket-protocol") == b"chat"
        c.send(sid, frame(TEXT, b"hi"))
        assert c.message(sid) == (True, TEXT, b"echo:hi")
        sid = c.open("/scope?q=1", extra=[("x-custom", "v")])
        m = c.message(sid)
        assert m and m[1] == TEXT
        scope = json.loads(m[2])
        assert scope == {"path": "/scope", "query_string": "q=1", "raw_path": "/scope", "root_path": "",
                         "scheme": "ws", "subprotocols": [], "type": "websocket", "x-custom": ["v"]}
    finally:
        c.close()
