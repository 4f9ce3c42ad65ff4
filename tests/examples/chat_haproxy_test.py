#!/usr/bin/python3
"""examples/chat scaled out: two `csgi serve --workers 2` hosts behind one HAProxy (round robin, from its
own temporary config on a free port), sharing one redis-server. As root, each is a host of its own: the
csgi hosts in network namespaces csgi-h1 and csgi-h2, Redis and HAProxy in csgi-h3 (tests/reliability/
netlab.py's lab, 198.18.0.0/24, which exists only on this machine), the client in the root namespace;
otherwise all on 127.0.0.1. Every request goes through
HAProxy, which names the host that answered (X-Served-By), so the test sees requests of one client land on
both hosts. Checks sessions, CSRF, the shared rate limit and broadcast (WebSocket and SSE) across the
hosts; then Redis stopped: 503 with the reason from what needs it, the page still served; Redis restarted
on the same port: service resumes by itself (a new login, the broadcast listeners back).
Skipped (exit 0 with the reason) without haproxy or redis-server.
Usage: chat_haproxy_test.py CSGI_EXE CHAT_SO"""
import asyncio
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time

import websockets

from chat_hosts import Sse, check, endpoint, failures, free_port, request, serve, start_redis, stop, wait_port

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reliability"))
import netlab  # noqa: E402

CSGI, CHAT = sys.argv[1:3]
HAPROXY = "/usr/sbin/haproxy"


def start_haproxy(tmp, hosts, addr="127.0.0.1", netns=None):
    """HAProxy on a free port of `addr` (in `netns`), round robin over the endpoints `hosts`: (process, port)."""
    port = free_port()
    conf = os.path.join(tmp, "haproxy.cfg")
    servers = "".join("  server h%d %s:%d\n" % ((i,) + endpoint(h)) for i, h in enumerate(hosts))
    with open(conf, "w") as f:
        f.write("global\n  maxconn 256\n"
                "defaults\n  mode http\n  timeout connect 2s\n  timeout client 30s\n  timeout server 30s\n"
                "  timeout tunnel 30s\n"
                "frontend chat\n  bind %s:%d\n  default_backend hosts\n"
                "backend hosts\n  balance roundrobin\n  http-response set-header X-Served-By %%s\n%s"
                % (addr, port, servers))
    argv = (["ip", "netns", "exec", netns] if netns else []) + [HAPROXY, "-db", "-f", conf]
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, start_new_session=True)
    if not wait_port(port, addr):
        stop(p)
        raise SystemExit("haproxy did not start")
    return p, port


def json_post(port, path, body, cookie, token):
    return request(port, "POST", path, json.dumps(body),
                   {"Cookie": cookie, "X-CSRF-Token": token, "Content-Type": "application/json"})


def login(lb, name):
    st, h, body = request(lb, "POST", "/login", "name=" + name, {"Content-Type": "application/x-www-form-urlencoded"})
    return st, (h.get("Set-Cookie") or "").split(";")[0], body


async def ws_next(ws):
    return json.loads(await asyncio.wait_for(ws.recv(), 10))


async def broadcast(lb, cookie, token):
    """A WebSocket and an SSE client through HAProxy (on either host) get what is posted through it."""
    async with websockets.connect("ws://%s:%d/ws?room=hall" % endpoint(lb)) as ws:
        check(await ws_next(ws) == {"joined": "hall"}, "WebSocket through HAProxy joined")
        sse = await asyncio.to_thread(Sse, lb, "/events?room=hall")
        check(await asyncio.to_thread(sse.event) == {"retry": "2000"}, "SSE through HAProxy subscribed")
        texts = ["m%d" % i for i in range(4)]
        served = set()
        for t in texts:
            st, h, _ = await asyncio.to_thread(json_post, lb, "/say?room=hall", {"text": t}, cookie, token)
            check(st == 202, "POST /say %s: 202" % t)
            served.add(h.get("X-Served-By"))
        check(served == {"h0", "h1"}, "the posts went to both hosts (%s)" % served)
        want = [{"from": "bo", "text": t} for t in texts]
        got_ws = [await ws_next(ws) for _ in texts]
        check(got_ws == want, "the WebSocket client got every post, in order (%s)" % got_ws)
        got_sse = [json.loads((await asyncio.to_thread(sse.event)).get("data", "null")) for _ in texts]
        check(got_sse == want, "the SSE client got every post, in order (%s)" % got_sse)
        sse.close()


async def after_restart(lb, cookie, token):
    """A post reaches an SSE client once the hosts' listeners are back: a post made before is lost (Redis
    pub/sub keeps nothing), so each try subscribes anew, posts, and waits 2 s for it."""
    deadline = time.time() + 30
    while time.time() < deadline:
        sse = await asyncio.to_thread(Sse, lb, "/events?room=hall", None, 2)
        try:
            await asyncio.to_thread(sse.event)
            st, _, _ = await asyncio.to_thread(json_post, lb, "/say?room=hall", {"text": "back"}, cookie, token)
            if st == 202:
                return json.loads((await asyncio.to_thread(sse.event)).get("data", "null"))
        except OSError:
            pass
        finally:
            sse.close()
        await asyncio.sleep(0.2)
    return None


def run(lb, redis, tmp, procs, netns, password):
    st, cookie, body = login(lb, "bo")
    check(st == 200 and cookie.startswith("csgi_session="), "POST /login through HAProxy (%s)" % body)
    served = set()
    for _ in range(4):
        st, h, body = request(lb, "GET", "/me", headers={"Cookie": cookie})
        check(st == 200 and json.loads(body) == {"name": "bo"}, "GET /me: the session on every host")
        served.add(h.get("X-Served-By"))
    check(served == {"h0", "h1"}, "GET /me answered by both hosts (%s)" % served)
    st, _, body = request(lb, "GET", "/csrf", headers={"Cookie": cookie})
    token = json.loads(body)["token"] if st == 200 else ""
    for _ in range(2):
        st, _, _ = json_post(lb, "/say?room=hall", {"text": "x"}, cookie, "")
        check(st == 403, "POST /say without the token: 403 on either host")
    # 20 per session per 10 s, counted on Redis whichever host answers.
    statuses, retry_after = [], None
    for _ in range(40):
        st, h, _ = json_post(lb, "/say?room=void", {"text": "x"}, cookie, token)
        statuses.append(st)
        if st == 429:
            retry_after = h.get("Retry-After")
            break
    check(statuses[-1] == 429 and (retry_after or "").isdigit() and 15 <= statuses.count(202) <= 30,
          "the rate limit holds across hosts: 429 with Retry-After after about 20 (%s)" % statuses)

    st, cookie, _ = login(lb, "bo")  # a new session: a fresh bucket
    st, _, body = request(lb, "GET", "/csrf", headers={"Cookie": cookie})
    token = json.loads(body)["token"]
    asyncio.run(broadcast(lb, cookie, token))

    # Redis down: what needs it answers 503 with the reason; the page is still served.
    procs[0].kill()
    procs[0].wait()
    for _ in range(2):
        st, _, body = request(lb, "GET", "/me", headers={"Cookie": cookie})
        check(st == 503 and b"Session store unavailable: Redis at %s" % endpoint(redis)[0].encode() in body,
              "Redis down: GET /me 503 with the reason (%d %s)" % (st, body[:80]))
        st, _, body = request(lb, "GET", "/")
        check(st == 200 and b"<title>chat</title>" in body, "Redis down: the page is still served")
    # Back on the same port, empty: sessions are gone, a new login works once the clients' backoff ends.
    procs[0], _ = start_redis(tmp, endpoint(redis)[1], endpoint(redis)[0], netns, password)
    deadline = time.time() + 20
    st = None
    while time.time() < deadline and st != 200:
        st, cookie, _ = login(lb, "bo")
        if st != 200:
            time.sleep(0.2)
    check(st == 200, "Redis back: a new login works (%s)" % st)
    st, _, body = request(lb, "GET", "/csrf", headers={"Cookie": cookie})
    token = json.loads(body)["token"] if st == 200 else ""
    arrived = asyncio.run(after_restart(lb, cookie, token))
    check(arrived is not None and arrived["from"] == "bo", "Redis back: broadcast resumes (%s)" % arrived)


def main():
    for exe, pkg in (("/usr/bin/redis-server", "redis-server"), (HAPROXY, "haproxy")):
        if not os.access(exe, os.X_OK):
            print("skipped: %s not installed (Debian: %s)" % (exe, pkg))
            return
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        if netlab.have_root_net():
            lab = stack.enter_context(netlab.Lab(3))
            (ns_a, ns_b, ns_lb), (addr_a, addr_b, addr_lb) = lab.hosts, lab.addrs
            password = os.urandom(12).hex()  # Redis beyond loopback: clients AUTH
            print("in network namespaces: hosts %s and %s, Redis and HAProxy on %s" % (addr_a, addr_b, addr_lb))
        else:
            ns_a = ns_b = ns_lb = None
            addr_a = addr_b = addr_lb = "127.0.0.1"
            password = None
            print("on 127.0.0.1 (network namespaces need root)")
        redis, redis_port = start_redis(tmp, None, addr_lb, ns_lb, password)
        procs = [redis]
        try:
            pa, a = serve(CSGI, CHAT, (addr_lb, redis_port), addr_a, ns_a, password)
            procs.append(pa)
            pb, b = serve(CSGI, CHAT, (addr_lb, redis_port), addr_b, ns_b, password)
            procs.append(pb)
            hp, lb = start_haproxy(tmp, [(addr_a, a), (addr_b, b)], addr_lb, ns_lb)
            procs.append(hp)
            run((addr_lb, lb), (addr_lb, redis_port), tmp, procs, ns_lb, password)
        finally:
            for p in reversed(procs):
                if p.poll() is None:
                    stop(p)
    if failures:
        sys.exit("%d failed" % len(failures))
    print("all passed")


if __name__ == "__main__":
    main()
