"""csgi.asgi(): C++ apps as ASGI 3 applications, driven in process with a validating fake server, and
mounted in Starlette under uvicorn and hypercorn (with the hostile paths: a client that leaves mid-body
or mid-response, an app that never reads its body, a stream that fails after the response started)."""
import asyncio
import http.client
import os
import socket
import time

import pytest

import csgi
from conftest import PYTHON, SMUGGLED, assert_header_rule, fetch, free_port

# ----------------------------------------------------------------------------------- in process


def scope(path="/", method="GET", root_path="", headers=(), query=b""):
    return {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method,
            "scheme": "http", "path": path, "raw_path": (root_path + path).encode(), "root_path": root_path,
            "query_string": query, "headers": [(n.encode(), v.encode()) for n, v in headers],
            "client": ("127.0.0.1", 40000), "server": ("127.0.0.1", 8000)}


def drive(app, sc, chunks=(b"",), disconnect=False, timeout=10):
    """Runs one request; returns the messages the app sent. After the body (and the disconnect, if asked
    for) receive() waits until the response is over, then reports the disconnect, as uvicorn does."""
    async def main():
        sent = []
        done = asyncio.Event()
        incoming = [{"type": "http.request", "body": c, "more_body": i + 1 < len(chunks) or disconnect}
                    for i, c in enumerate(chunks)]
        if disconnect:
            incoming.append({"type": "http.disconnect"})

        async def receive():
            if incoming:
                await asyncio.sleep(0)
                return incoming.pop(0)
            await done.wait()
            return {"type": "http.disconnect"}

        async def send(message):
            sent.append(message)
            if message["type"] == "http.response.body" and not message.get("more_body", False):
                done.set()

        try:
            await asyncio.wait_for(app(sc, receive, send), timeout)
        finally:
            done.set()
        return sent

    return asyncio.run(main())


def validate(messages):
    """ASGI http rules for what an app sends: one start (int status, lowercase bytes header pairs), then
    body messages with bytes bodies, every one but the last with more_body, nothing after the last."""
    assert messages, "nothing sent"
    start = messages[0]
    assert start["type"] == "http.response.start"
    assert type(start["status"]) is int
    for name, value in start["headers"]:
        assert type(name) is bytes and type(value) is bytes
        assert name == name.lower()
    bodies = messages[1:]
    assert bodies, "no http.response.body"
    for m in bodies:
        assert m["type"] == "http.response.body"
        assert type(m.get("body", b"")) is bytes
    for m in bodies[:-1]:
        assert m.get("more_body") is True
    assert bodies[-1].get("more_body", False) is False
    headers = {n.decode(): v.decode() for n, v in start["headers"]}
    return start["status"], headers, b"".join(m.get("body", b"") for m in bodies)


def test_complete_body_one_message(load):
    messages = drive(csgi.asgi(load("hello")), scope())
    assert len(messages) == 2
    status, headers, body = validate(messages)
    assert (status, body) == (200, b"Hello, World!")
    assert headers["content-length"] == "13"


def test_scope_to_env_as_the_wsgi_bridge(load):
    sc = scope("/x/a%2Fb", method="POST", root_path="/cpp", query=b"q=1",
               headers=[("Content-Type", "text/plain"), ("X-Test", "a"), ("x-test", "b"), ("Cookie", "a=1"),
                        ("cookie", "b=2")])
    sc["raw_path"] = b"/cpp/x/a%2Fb"
    status, headers, body = validate(drive(csgi.asgi(load("echo")), sc, chunks=(b"he", b"llo")))
    lines = dict(line.split("=", 1) for line in body.decode().splitlines())
    assert status == 200 and headers["x-echo"] == "1"
    assert lines["SCRIPT_NAME"] == "/cpp" and lines["PATH_INFO"] == "/x/a%2Fb"
    assert lines["REQUEST_URI"] == "/cpp/x/a%2Fb?q=1" and lines["QUERY_STRING"] == "q=1"
    assert lines["HTTP_X_TEST"] == "a, b" and lines["HTTP_COOKIE"] == "a=1; b=2"
    assert lines["CONTENT_TYPE"] == "text/plain" and lines["body"] == "hello"


def test_dot_segments_and_above_root(load):
    status, _, body = validate(drive(csgi.asgi(load("echo")), scope("/a/../b", root_path="/cpp")))
    assert status == 200 and b"PATH_INFO=/b\n" in body
    status, _, _ = validate(drive(csgi.asgi(load("echo")), scope("/../..", root_path="")))
    assert status == 400


@pytest.mark.parametrize("name, expected", [
    ("stream", b"".join(b"chunk%d\n" % i for i in range(5))),
    ("writer", b"".join(b"part%d\n" % i for i in range(5))),
])
def test_streams_and_writers_as_more_body(load, name, expected):
    messages = drive(csgi.asgi(load(name)), scope())
    status, headers, body = validate(messages)
    assert (status, body) == (200, expected)
    assert len(messages) >= 3 and "content-length" not in headers


def test_file_body_in_chunks(load, tmp_path):
    data = os.urandom(300000)
    (tmp_path / "f").write_bytes(data)
    messages = drive(csgi.asgi(load("file", str(tmp_path / "f"))), scope())
    status, headers, body = validate(messages)
    assert body == data and headers["content-length"] == str(len(data))
    assert len(messages) > 3  # in chunks, not whole


@pytest.mark.parametrize("kind", ["stream", "writer"])
@pytest.mark.parametrize("threads", [None, 2])
def test_trailers_sent_where_the_server_offers_them(load, kind, threads):
    """RES-15/ADP-17: a stream's and a writer's trailer fields go out as http.response.trailers after the
    last body message when scope["extensions"] offers the extension (forbidden fields dropped), and not at
    all when it does not."""
    sc = scope()
    sc["extensions"] = {"http.response.trailers": {}}
    messages = drive(csgi.asgi(load("trailers", kind), threads=threads), sc)
    assert messages[0]["trailers"] is True
    assert messages[-1] == {"type": "http.response.trailers", "headers": [(b"grpc-status", b"0")],
                            "more_trailers": False}
    status, headers, body = validate(messages[:-1])
    assert (status, body, headers["trailer"]) == (200, b"one two three", "grpc-status")
    messages = drive(csgi.asgi(load("trailers", kind), threads=threads), scope())
    assert not messages[0].get("trailers") and messages[-1]["type"] == "http.response.body"
    assert validate(messages)[2] == b"one two three"


@pytest.mark.parametrize("args, status, body", [
    (("delayed",), 200, b"delayed"), (("shared",), 200, b"shared bytes"), (("status", "204"), 204, b""),
    (("error",), 500, None), (("bad",), 400, None),
])
def test_other_kinds(load, args, status, body):
    got_status, _, got_body = validate(drive(csgi.asgi(load(*args)), scope()))
    assert got_status == status
    if body is not None:
        assert got_body == body


def test_builder_stack_and_lifespan(load):
    stack = csgi.Builder().mount("/hello", load("hello"))
    app = csgi.asgi(stack)
    assert validate(drive(app, scope("/hello")))[2] == b"Hello, World!"

    async def lifespan():
        out = []
        incoming = [{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}]

        async def receive():
            return incoming.pop(0)

        async def send(m):
            out.append(m["type"])

        await app({"type": "lifespan", "asgi": {"version": "3.0"}}, receive, send)
        return out

    assert asyncio.run(lifespan()) == ["lifespan.startup.complete", "lifespan.shutdown.complete"]


def test_large_body_read_with_back_pressure(load, tmp_path):
    chunks = [os.urandom(32768) for _ in range(40)]  # 1.3 MB, more than the read-ahead buffer
    status, _, body = validate(drive(csgi.asgi(load("reader", str(tmp_path / "r"))), scope(method="POST"),
                                     chunks=chunks))
    assert (status, body) == (200, b"read %d" % sum(map(len, chunks)))


def test_disconnect_mid_body_is_an_input_error(load, tmp_path):
    out = tmp_path / "r"
    drive(csgi.asgi(load("reader", str(out))), scope(method="POST"), chunks=(b"x" * 1000, b"y" * 1000),
          disconnect=True)
    assert out.read_text().startswith("error: ") and "disconnected" in out.read_text()


def test_app_that_never_reads_its_body(load):
    chunks = [b"z" * 65536] * 40
    status, _, body = validate(drive(csgi.asgi(load("hello")), scope(method="POST"), chunks=chunks))
    assert (status, body) == (200, b"Hello, World!")


def test_failure_after_the_response_started(load):
    sent = []

    async def main():
        incoming = [{"type": "http.request", "body": b""}]

        async def receive():
            if incoming:
                return incoming.pop()
            await asyncio.sleep(3600)

        async def send(m):
            sent.append(m)

        await csgi.asgi(load("fail_mid"))(scope(), receive, send)

    with pytest.raises(Exception, match="stream failed mid-body"):
        asyncio.run(main())
    assert sent[0]["type"] == "http.response.start"
    assert all(m.get("more_body") is True for m in sent[1:])  # never a final message: the server aborts


@pytest.mark.parametrize("threads", [0, 4])
def test_an_env_entry_is_made_from_the_scope_when_read(load, threads):
    from csgi._csgi import _env_conversions as conversions
    headers = [("X-H%02d" % i, "value %d" % i) for i in range(20)]
    hello = csgi.asgi(load("hello"), threads=threads)
    before = conversions()
    assert validate(drive(hello, scope("/", headers=headers)))[2] == b"Hello, World!"
    assert conversions() == before + 2  # SCRIPT_NAME and PATH_INFO, made canonical before every app
    before = conversions()
    assert validate(drive(csgi.asgi(load("late_key", "REMOTE_ADDR"), threads=threads),
                          scope("/", headers=headers)))[2] == b"127.0.0.1"
    assert conversions() == before + 3  # and REMOTE_ADDR, read from the body stream
    # The first header key read makes the whole env: every header and CGI key, each once.
    late = csgi.asgi(load("late_key", "HTTP_X_H07"), threads=threads)
    assert validate(drive(late, scope("/", headers=headers)))[2] == b"value 7"


def test_env_erased_and_set_before_any_read_is_as_an_eager_one(load):
    # The app erases and sets keys before reading any: erase() answers as it would on an env made whole
    # first, and what the scope holds never comes back over the app's own values.
    sc = scope("/p", headers=[("Host", "example.org"), ("X-Gone", "g"), ("Content-Type", ""), ("X-Set", "s"),
                              ("Content-Length", "0")])
    status, _, body = validate(drive(csgi.asgi(load("erase_first"), threads=0), sc))
    lines = body.decode().splitlines()
    assert lines[:5] == ["SERVER_NAME=erased", "REMOTE_ADDR=erased", "HTTP_X_GONE=erased", "CONTENT_TYPE=absent",
                         "HTTP_X_NONE=absent"]
    env = dict(line.split("=", 1) for line in lines[5:])
    assert (env["SERVER_PORT"], env["HTTP_X_SET"], env["REQUEST_METHOD"], env["CONTENT_LENGTH"]) == ("1", "mine", "GET", "0")
    assert not {"SERVER_NAME", "REMOTE_ADDR", "HTTP_X_GONE", "CONTENT_TYPE"} & set(env)
    assert env["HTTP_HOST"] == "example.org" and env["REMOTE_PORT"] == "40000"


def test_scope_headers_follow_the_one_header_rule(load):
    sc = scope("/", headers=SMUGGLED)
    status, _, body = validate(drive(csgi.asgi(load("dump")), sc))
    assert status == 200
    assert_header_rule(body)


def run_websocket(app, extensions=None, first="websocket.connect"):
    async def main():
        sent = []
        incoming = [{"type": first}]

        async def receive():
            if incoming:
                return incoming.pop()
            await asyncio.sleep(3600)

        async def send(m):
            sent.append(m)

        sc = {"type": "websocket", "asgi": {"version": "3.0"}, "http_version": "1.1", "scheme": "ws", "path": "/",
              "raw_path": b"/", "root_path": "", "query_string": b"", "headers": [], "subprotocols": []}
        if extensions is not None:
            sc["extensions"] = extensions
        await asyncio.wait_for(app(sc, receive, send), 10)
        return sent

    return asyncio.run(main())


def test_websocket_scope_refused_with_501_where_the_server_allows_it(load):
    sent = run_websocket(csgi.asgi(load("hello")), {"websocket.http.response": {}})
    assert [m["type"] for m in sent] == ["websocket.http.response.start", "websocket.http.response.body"]
    assert sent[0]["status"] == 501 and b"csgix.websocket" in sent[1]["body"]
    assert dict(sent[0]["headers"])[b"content-length"] == b"%d" % len(sent[1]["body"])


def test_websocket_scope_refused_with_close_elsewhere(load):
    assert run_websocket(csgi.asgi(load("hello")), {}) == [{"type": "websocket.close", "code": 1003}]
    assert run_websocket(csgi.asgi(load("hello"))) == [{"type": "websocket.close", "code": 1003}]
    assert run_websocket(csgi.asgi(load("hello")), first="websocket.disconnect") == []


def test_other_scope_types_raise(load):
    async def main():
        await csgi.asgi(load("hello"))({"type": "unknown"}, None, None)

    with pytest.raises(RuntimeError, match="unknown"):
        asyncio.run(main())


# ------------------------------------------------------------------ mounted in Starlette, real servers

SITE = '''
import os
import csgi
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Mount, Route

lib, d = os.environ["CSGI_TEST_APPS"], os.environ["ASGI_TEST_DIR"]


def cxx(*args):
    return csgi.asgi(csgi.load_app(lib, list(args)))


async def py(request):
    return PlainTextResponse("python")


app = Starlette(routes=[
    Route("/py", py),
    Mount("/hello", cxx("hello")), Mount("/echo", cxx("echo")), Mount("/stream", cxx("stream")),
    Mount("/writer", cxx("writer")), Mount("/file", cxx("file", os.path.join(d, "data"))),
    Mount("/reader", cxx("reader", os.path.join(d, "reader.txt"))),
    Mount("/endless", cxx("endless", os.path.join(d, "endless.txt"))), Mount("/fail", cxx("fail_mid")),
    Mount("/dump", cxx("dump")),
])
'''

SERVERS = {
    "uvicorn": lambda port: [PYTHON, "-m", "uvicorn", "asgi_site:app", "--port", str(port), "--log-level", "warning"],
    "hypercorn": lambda port: [PYTHON, "-m", "hypercorn", "asgi_site:app", "--bind", "127.0.0.1:%d" % port],
}


@pytest.fixture(params=sorted(SERVERS))
def mounted(request, server_factory, apps_lib, tmp_path):
    pytest.importorskip(request.param)
    pytest.importorskip("starlette")
    (tmp_path / "asgi_site.py").write_text(SITE)
    (tmp_path / "data").write_bytes(bytes(range(256)) * 1000)
    port = free_port()
    env = {"PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]),
           "CSGI_TEST_APPS": apps_lib, "ASGI_TEST_DIR": str(tmp_path)}
    return server_factory(SERVERS[request.param](port), port, env=env, cwd=tmp_path), tmp_path


def wait_for_file(path, timeout=10):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.read_text():
            return path.read_text()
        time.sleep(0.05)
    raise AssertionError("%s was not written" % path)


def test_mounted_responses(mounted):
    srv, tmp = mounted
    assert srv.request("GET", "/py")[2] == b"python"
    status, headers, body = srv.request("GET", "/hello/")
    assert (status, body) == (200, b"Hello, World!")
    status, headers, body = srv.request("POST", "/echo/a/b?x=1", body=b"payload", headers={"X-Test": "t"})
    lines = dict(line.split("=", 1) for line in body.decode().splitlines())
    assert (lines["SCRIPT_NAME"], lines["PATH_INFO"], lines["QUERY_STRING"]) == ("/echo", "/a/b", "x=1")
    assert lines["REQUEST_URI"] == "/echo/a/b?x=1" and lines["body"] == "payload" and lines["HTTP_X_TEST"] == "t"
    assert srv.request("GET", "/stream/")[2] == b"".join(b"chunk%d\n" % i for i in range(5))
    assert srv.request("GET", "/writer/")[2] == b"".join(b"part%d\n" % i for i in range(5))
    assert srv.request("GET", "/file/")[2] == (tmp / "data").read_bytes()
    big = os.urandom(3 << 20)
    assert srv.request("POST", "/reader/", body=big)[2] == b"read %d" % len(big)


def test_mounted_header_rule_on_the_wire(mounted):
    srv, _ = mounted
    status, _, _, body = fetch(srv.port, "GET", "/dump/", headers=SMUGGLED)
    assert status == 200, body
    assert_header_rule(body)


def websocket_handshake(port, path):
    """A WebSocket opening handshake on a raw socket: (status, head and body read until the server closed)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(("GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                   "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n" % path).encode())
        data = b""
        for _ in range(100):  # until the server closes, or the head and a Content-Length body are in
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
            head, sep, body = data.partition(b"\r\n\r\n")
            length = [l.split(b":", 1)[1] for l in head.lower().split(b"\r\n") if l.startswith(b"content-length:")]
            if sep and len(body) >= (int(length[0]) if length else 0):
                break
    return int(data.split(b" ", 2)[1]), data


def test_mounted_websocket_is_refused_cleanly(mounted):
    srv, _ = mounted
    status, data = websocket_handshake(srv.port, "/hello/")
    # 501 with the reason where the server offers websocket.http.response (hypercorn), else 403.
    assert status in (403, 501), data
    if status == 501:
        assert b"csgix.websocket" in data
    assert srv.request("GET", "/hello/")[0] == 200
    out = srv.output()
    assert "Traceback" not in out and "Exception" not in out, out


def test_mounted_disconnect_mid_body(mounted):
    srv, tmp = mounted
    with socket.create_connection(("127.0.0.1", srv.port)) as s:
        s.sendall(b"POST /reader/ HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n" + b"a" * 5000)
        time.sleep(0.3)
    assert wait_for_file(tmp / "reader.txt").startswith("error: ")
    assert srv.request("GET", "/hello/")[0] == 200


def test_mounted_disconnect_mid_response(mounted):
    srv, tmp = mounted
    with socket.create_connection(("127.0.0.1", srv.port)) as s:
        s.sendall(b"GET /endless/ HTTP/1.1\r\nHost: x\r\n\r\n")
        got = 0
        while got < 200000:
            data = s.recv(65536)
            assert data
            got += len(data)
    text = wait_for_file(tmp / "endless.txt")
    assert text.startswith("closed after ") and int(text.split()[-1]) < 100000
    assert srv.request("GET", "/hello/")[0] == 200


def test_mounted_app_never_reads_body(mounted):
    srv, _ = mounted
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=10)
    conn.request("POST", "/hello/", body=b"q" * (2 << 20))
    r = conn.getresponse()
    assert (r.status, r.read()) == (200, b"Hello, World!")
    conn.close()
    assert srv.request("GET", "/hello/")[0] == 200


def test_mounted_failure_after_start_aborts_the_response(mounted):
    srv, _ = mounted
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=10)
    conn.request("GET", "/fail/")
    r = conn.getresponse()
    assert r.status == 200
    with pytest.raises(http.client.IncompleteRead):
        r.read()  # never taken for a complete body
    conn.close()
    assert srv.request("GET", "/hello/")[2] == b"Hello, World!"
    deadline = time.monotonic() + 5
    while "stream failed mid-body" not in srv.output() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "stream failed mid-body" in srv.output()


@pytest.mark.parametrize("args", [("hello",), ("echo",), ("stream",), ("delayed",)])
def test_inline_mode_answers_alike(load, args):
    sc = scope("/x", method="POST", root_path="/cpp", headers=[("Content-Type", "text/plain")])
    pooled = validate(drive(csgi.asgi(load(*args), threads=8), sc, chunks=(b"abc",)))
    inline = validate(drive(csgi.asgi(load(*args), threads=0), sc, chunks=(b"abc",)))
    default = validate(drive(csgi.asgi(load(*args)), sc, chunks=(b"abc",)))
    assert pooled == inline == default


@pytest.mark.parametrize("method", ["GET", "HEAD"])
def test_inline_bodyless_request_needs_no_receive(load, method):
    """threads=0: a GET/HEAD without Content-Length or Transfer-Encoding on HTTP/1 has no body (RFC 9112
    6.3), so the app runs without a receive(); a POST, or any request over HTTP/2, still receives first."""
    app = csgi.asgi(load("echo"), threads=0)
    received = []

    async def main(sc):
        sent = []

        async def receive():
            received.append(sc["method"])
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message):
            sent.append(message)

        await app(sc, receive, send)
        return sent

    status, _, body = validate(asyncio.run(main(scope("/x", method=method))))
    assert status == 200 and received == []
    assert method == "HEAD" or b"REQUEST_METHOD=GET\n" in body
    validate(asyncio.run(main(scope("/x", method="POST"))))
    sc = scope("/x", method=method)
    sc["http_version"] = "2"
    validate(asyncio.run(main(sc)))
    assert received == ["POST", method]


async def _gather_gets(app, n):
    """n GET requests of `app` at once on this loop: their statuses and how long they took together."""
    async def one():
        sent = []

        async def receive():
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message):
            sent.append(message)

        await app(scope("/"), receive, send)
        return validate(sent)[0]

    t = time.monotonic()
    statuses = await asyncio.gather(*(one() for _ in range(n)))
    return statuses, time.monotonic() - t


def test_by_default_a_quick_app_stays_on_the_loop_and_a_slow_one_moves_to_a_pool(load, capfd):
    """threads=None: no worker thread starts while every call is quick; the second call that holds the
    loop longer than 2 ms moves the app to its pool (then ten 50 ms requests take far less than 500 ms)."""
    tasks = lambda: len(os.listdir("/proc/self/task"))  # noqa: E731
    before = tasks()
    quick = csgi.asgi(load("hello"))
    statuses, _ = asyncio.run(_gather_gets(quick, 50))
    assert statuses == [200] * 50 and tasks() <= before  # (a pool's threads live as long as `quick`)
    slow = csgi.asgi(load("work", "50"))
    statuses, took = asyncio.run(_gather_gets(slow, 2))  # one after the other, on the loop
    assert statuses == [200] * 2 and took >= 0.1
    assert "held the event loop for" in capfd.readouterr().err
    statuses, took = asyncio.run(_gather_gets(slow, 10))
    assert statuses == [200] * 10 and took < 0.4


def test_a_slow_call_counts_when_the_loop_thread_waited_or_computed_not_when_it_was_preempted():
    from csgi._asgi import _held_the_loop, _thread_usage
    assert not _held_the_loop((7, 1.0), (7, 1.0005))  # preempted: no wait, little CPU
    assert _held_the_loop((7, 1.0), (8, 1.0))         # it waited (a voluntary context switch)
    assert _held_the_loop((7, 1.0), (7, 1.01))        # it computed for 10 ms
    assert _held_the_loop(None, None)                 # unknown usage: wall time alone
    before = _thread_usage()
    time.sleep(0.01)
    assert _held_the_loop(before, _thread_usage())


def test_pool_apps_run_off_the_loop_on_several_loops_at_once(load):
    """With a pool the C++ app runs on worker threads without the GIL (ten 50 ms requests on one loop take
    far less than 500 ms), and an app shared by event loops on two threads answers on both."""
    import threading
    app = csgi.asgi(load("work", "50"), threads=8)

    statuses, took = asyncio.run(_gather_gets(app, 10))
    assert statuses == [200] * 10 and took < 0.4
    results = []
    threads = [threading.Thread(target=lambda: results.append(asyncio.run(_gather_gets(app, 4))[0])) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert results == [[200] * 4, [200] * 4]
