#!/usr/bin/python3
"""examples/chat/chat.cpp on two hosts: two `csgi serve --workers 2` sharing one redis-server (started here
from a temporary config on a free port of 127.0.0.1). Checks the HTTP contract of docs/examples/chat.md
across the hosts: a session made on one is known on the other, /say needs the session (401) and its CSRF
token (403), the rate limit holds across hosts (429 with Retry-After), the CORS preflight of the configured
origin is answered, and what is posted to one host reaches WebSocket and SSE clients of the other, in order.
Skipped (exit 0 with the reason) when redis-server is not installed.
Usage: chat_test.py CSGI_EXE CHAT_SO"""
import asyncio
import json
import os
import sys
import tempfile

import websockets

from chat_hosts import ORIGIN, Sse, check, failures, request, serve, start_redis, stop

CSGI, CHAT = sys.argv[1:3]


async def ws_messages(url, joined, n):
    """Opens a WebSocket, sets `joined` once the room greeted it, then returns the next n messages."""
    async with websockets.connect(url) as ws:
        hello = json.loads(await asyncio.wait_for(ws.recv(), 10))
        joined.set_result(hello)
        return [json.loads(await asyncio.wait_for(ws.recv(), 10)) for _ in range(n)]


async def broadcast(a, b, cookie, token):
    """Posts three messages to host a; a WebSocket client and an SSE client of host b get them in order."""
    loop = asyncio.get_running_loop()
    joined = loop.create_future()
    ws_task = asyncio.ensure_future(ws_messages("ws://127.0.0.1:%d/ws?room=den" % b, joined, 3))
    hello = await asyncio.wait_for(joined, 10)
    check(hello == {"joined": "den"}, "the WebSocket joined its room (%s)" % hello)
    for origin, want in ((ORIGIN, None), ("http://evil.example", 403)):
        try:
            async with websockets.connect("ws://127.0.0.1:%d/ws" % b, origin=origin) as ws:
                got = None if json.loads(await asyncio.wait_for(ws.recv(), 10)) == {"joined": "lobby"} else "?"
        except websockets.exceptions.InvalidStatusCode as e:
            got = e.status_code
        check(got == want, "a WebSocket from %s: %s (%s)" % (origin, want or "joined", got))
    sse = await asyncio.to_thread(Sse, b, "/events?room=den")
    check(sse.res.status == 200 and sse.res.getheader("Content-Type") == "text/event-stream; charset=utf-8",
          "SSE: 200 text/event-stream")
    first = await asyncio.to_thread(sse.event)  # written once the stream is subscribed
    check(first == {"retry": "2000"}, "SSE: the reconnection delay first (%s)" % first)
    other = await asyncio.to_thread(request, a, "POST", "/say?room=elsewhere", json.dumps({"text": "not here"}),
                                    {"Cookie": cookie, "X-CSRF-Token": token, "Content-Type": "application/json"})
    check(other[0] == 202, "a message to another room")
    ids = []
    for text in ("one", "two", "three"):
        st, _, body = await asyncio.to_thread(request, a, "POST", "/say?room=den", json.dumps({"text": text}),
                                              {"Cookie": cookie, "X-CSRF-Token": token,
                                               "Content-Type": "application/json"})
        check(st == 202, "POST /say %s on host a: 202 (%s)" % (text, body))
        ids.append(json.loads(body)["id"] if st == 202 else None)
    want = [{"from": "ann", "text": t} for t in ("one", "two", "three")]
    got = await asyncio.wait_for(ws_task, 15)
    check(got == want, "host b's WebSocket client got them, in order (%s)" % got)
    events = [await asyncio.to_thread(sse.event) for _ in range(3)]
    check([json.loads(e.get("data", "null")) for e in events] == want, "host b's SSE client got them, in order")
    check([int(e.get("id", "0")) for e in events] == ids, "SSE ids are the message ids (%s, %s)" % (events, ids))
    sse.close()
    # A browser reconnecting with Last-Event-ID gets what it missed (from the history in Redis), on either
    # host and either worker: twice on each host.
    for host in (a, b, a, b):
        replay = await asyncio.to_thread(Sse, host, "/events?room=den", {"Last-Event-ID": str(ids[0])})
        got = [await asyncio.to_thread(replay.event) for _ in range(3)]
        check(got[0] == {"retry": "2000"} and [json.loads(e.get("data", "null")) for e in got[1:]] == want[1:],
              "SSE with Last-Event-ID on host %s: the later messages again (%s)" % ("ab"[host == b], got))
        replay.close()


def main():
    if not os.access("/usr/bin/redis-server", os.X_OK):
        print("skipped: redis-server not installed (Debian: redis-server)")
        return
    with tempfile.TemporaryDirectory() as tmp:
        redis, redis_port = start_redis(tmp)
        procs = [redis]
        try:
            pa, a = serve(CSGI, CHAT, redis_port)
            procs.append(pa)
            pb, b = serve(CSGI, CHAT, redis_port)
            procs.append(pb)
            run(a, b)
        finally:
            for p in reversed(procs):
                stop(p)
    if failures:
        sys.exit("%d failed" % len(failures))
    print("all passed")


def run(a, b):
    st, _, _ = request(a, "GET", "/me")
    check(st == 401, "GET /me without a session: 401")
    st, h, body = request(a, "POST", "/login", "name=ann", {"Content-Type": "application/x-www-form-urlencoded"})
    check(st == 200 and json.loads(body) == {"name": "ann"}, "POST /login on host a: 200 {name} (%d %s)" % (st, body))
    cookie = (h.get("Set-Cookie") or "").split(";")[0]
    check(cookie.startswith("csgi_session="), "a session cookie")
    st, _, body = request(b, "GET", "/me", headers={"Cookie": cookie})
    check(st == 200 and json.loads(body) == {"name": "ann"}, "GET /me on host b knows the session (%d %s)" % (st, body))
    st, _, body = request(b, "GET", "/csrf", headers={"Cookie": cookie})
    token = json.loads(body).get("token", "") if st == 200 else ""
    check(len(token) == 64, "GET /csrf on host b: a (masked) token (%s)" % body)

    say = json.dumps({"text": "hi"})
    st, _, _ = request(a, "POST", "/say", say, {"Content-Type": "application/json"})
    check(st == 401, "POST /say without a session: 401")
    st, _, body = request(a, "POST", "/say", say, {"Cookie": cookie, "Content-Type": "application/json"})
    check(st == 403 and b"CSRF token missing" in body, "POST /say without the token: 403 (%s)" % body)
    st, _, body = request(a, "POST", "/say", say, {"Cookie": cookie, "X-CSRF-Token": "0" * 32,
                                                   "Content-Type": "application/json"})
    check(st == 403 and b"CSRF token invalid" in body, "POST /say with a wrong token: 403")

    st, h, _ = request(a, "OPTIONS", "/say", headers={"Origin": ORIGIN, "Access-Control-Request-Method": "POST",
                                                      "Access-Control-Request-Headers": "x-csrf-token,content-type"})
    check(st == 200 and h.get("Access-Control-Allow-Origin") == ORIGIN
          and h.get("Access-Control-Allow-Credentials") == "true", "CORS preflight of the configured origin")
    st, h, _ = request(a, "OPTIONS", "/say", headers={"Origin": "http://evil.example",
                                                      "Access-Control-Request-Method": "POST"})
    check(st == 400 and h.get("Access-Control-Allow-Origin") is None, "CORS preflight of another origin: 400")

    asyncio.run(broadcast(a, b, cookie, token))

    # 20 per session per 10 s over both hosts: 5 were posted above; the rest alternate between the hosts.
    statuses, retry_after = [], None
    for i in range(40):
        st, h, _ = request((a, b)[i % 2], "POST", "/say?room=den", say,
                           {"Cookie": cookie, "X-CSRF-Token": token, "Content-Type": "application/json"})
        statuses.append(st)
        if st == 429:
            retry_after = h.get("Retry-After")
            break
    check(statuses[-1] == 429 and retry_after is not None and retry_after.isdigit(),
          "the rate limit across hosts: 429 with Retry-After (%s, %s)" % (statuses, retry_after))
    check(15 <= statuses.count(202) <= 30, "about 20 allowed first (%d)" % statuses.count(202))


if __name__ == "__main__":
    main()
