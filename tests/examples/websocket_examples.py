#!/usr/bin/python3
"""The WebSocket examples and the demo page, served by `csgi serve` and used with python3-websockets:
examples/websocket_echo.cpp echoes, examples/websocket_chat.cpp broadcasts to every member, and
`csgi serve --demo` links its /websocket page, whose echo and chat endpoints work.
Usage: websocket_examples.py CSGI_EXE ECHO_SO CHAT_SO"""
import asyncio
import os
import re
import subprocess
import sys
import time

import websockets

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from ports import stop_group  # noqa: E402
from fetch import fetch  # noqa: E402

CSGI, ECHO, CHAT = sys.argv[1:4]
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)


def serve(*args):
    p = subprocess.Popen([CSGI, "serve", "--listen", "127.0.0.1:0"] + list(args), stdout=subprocess.PIPE, text=True,
                         start_new_session=True)
    deadline = time.time() + 15
    while time.time() < deadline:
        line = p.stdout.readline()
        m = re.search(r"listening on http://127.0.0.1:(\d+)/", line or "")
        if m:
            return p, int(m.group(1))
        if not line:
            break
    p.kill()
    raise SystemExit("server did not start")


def page(port, path):
    return fetch(port, path, timeout=5).decode()


async def echo(url):
    async with websockets.connect(url) as ws:
        await ws.send("ping?")
        return await asyncio.wait_for(ws.recv(), 5)


async def chat(url):
    async with websockets.connect(url) as a, websockets.connect(url) as b:
        await asyncio.sleep(0.2)
        await a.send("hi from a")
        seen_a, seen_b = [], []
        for ws, seen in ((a, seen_a), (b, seen_b)):
            try:
                while not any(m.endswith(": hi from a") for m in seen):
                    seen.append(await asyncio.wait_for(ws.recv(), 5))
            except asyncio.TimeoutError:
                pass
        return seen_a, seen_b


def main():
    p, port = serve("--app", ECHO)
    try:
        check("new WebSocket" in page(port, "/"), "echo example: its page")
        check(asyncio.run(echo("ws://127.0.0.1:%d/ws" % port)) == "ping?", "echo example echoes")
    finally:
        stop_group(p)
    p, port = serve("--app", CHAT)
    try:
        a, b = asyncio.run(chat("ws://127.0.0.1:%d/ws" % port))
        check(any(m.endswith(": hi from a") for m in a) and any(m.endswith(": hi from a") for m in b),
              "chat example: a message reaches every member (%s / %s)" % (a, b))
        check(any("joined" in m for m in a), "chat example: joins announced")
    finally:
        stop_group(p)
    p, port = serve("--demo")
    try:
        check('href="websocket"' in page(port, "/"), "demo page links the WebSocket page")
        check("websocket/chat" in page(port, "/websocket"), "demo WebSocket page")
        check(asyncio.run(echo("ws://127.0.0.1:%d/websocket/echo" % port)) == "ping?", "demo echo")
        a, b = asyncio.run(chat("ws://127.0.0.1:%d/websocket/chat" % port))
        check(any(m.endswith(": hi from a") for m in b), "demo chat broadcasts")
    finally:
        stop_group(p)
    if failures:
        sys.exit("%d failed" % len(failures))
    print("all passed")


main()
