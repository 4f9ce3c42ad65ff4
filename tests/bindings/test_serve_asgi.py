"""ASGI apps on the csgi servers: `csgi serve --asgi` against uvicorn on the same FastAPI app
(fastapi_site.py, with a C++ app mounted under /cpp), lifespan per worker, a failing startup, the hostile
paths (a client leaving a streaming response, an app raising after http.response.start), and C++
middleware in front of an ASGI app through csgi.Builder and csgi.serve()."""
import hashlib
import json
import http.client
import os
import re
import socket
import subprocess
import time
import urllib.parse

import pytest

import conftest
from conftest import HERE, PYTHON, free_port, multipart

pytest.importorskip("fastapi")

# Compared as in test_differential.py; uvicorn writes header names in lower case, csgi as the app gave
# them (ASGI names are lower case): names are compared without regard to case.
IGNORED = {"date", "server", "connection", "keep-alive", "transfer-encoding"}


def fetch(port, method, path, headers=(), body=None):
    status, _, got, data = conftest.fetch(port, method, path, headers, body)
    return status, got, data


def normalise(headers, port):
    here = "127.0.0.1:%d" % port  # in absolute redirects
    kept = [(k.lower(), v.replace(here, "HOST")) for k, v in headers if k.lower() not in IGNORED]
    return [(k, v) for k, v in kept if k != "content-length"], [v for k, v in kept if k == "content-length"]


BIG = bytes((i * 131 + 17) & 0xFF for i in range(300000))
JSON = [("Content-Type", "application/json")]
FORM = [("Content-Type", "application/x-www-form-urlencoded")]


def corpus():
    up1, ct1 = multipart([("title", "caf\u00e9")], [("file", "a.bin", b"hello upload")])
    up2, ct2 = multipart([("title", "big")], [("file", "big.bin", BIG)], boundary="b0undary-XYZ")
    up3, ct3 = multipart([], [("file", "x.bin", b"no title")])
    requests = [
        ("GET", "/", [], None),
        ("HEAD", "/", [], None),
        ("GET", "/items/1", [], None),
        ("GET", "/items/42?q=hello&n=3", [], None),
        ("GET", "/items/42?q=caf%C3%A9", [], None),
        ("GET", "/items/-7?n=0", [], None),
        ("GET", "/items/abc", [], None),
        ("GET", "/items/1?n=x", [], None),
        ("GET", "/items/", [], None),
        ("GET", "/items", [], None),
        ("POST", "/items", JSON, b'{"name": "pen", "price": 1.5, "tags": ["a", "b"]}'),
        ("POST", "/items", JSON, b'{"name": "\\u00e9t\\u00e9", "price": 2}'),
        ("POST", "/items", JSON, b'{"name": "pen"}'),
        ("POST", "/items", JSON, b'{broken'),
        ("POST", "/items", [], b''),
        ("PUT", "/items", JSON, b'{}'),
        ("GET", "/path/a/b/c", [], None),
        ("GET", "/path/caf%C3%A9/x%20y?z=1&z=2", [], None),
        ("GET", "/path/%E2%82%AC", [], None),
        ("POST", "/form", FORM, b"a=1&b=two"),
        ("POST", "/form", FORM, b"a=%C3%A9t%C3%A9"),
        ("POST", "/form", FORM, b"b=only"),
        ("POST", "/form", FORM, b""),
        ("POST", "/upload", [("Content-Type", ct1)], up1),
        ("POST", "/upload", [("Content-Type", ct2)], up2),
        ("POST", "/upload", [("Content-Type", ct3)], up3),
        ("POST", "/raw", [("Content-Type", "application/octet-stream")], BIG),
        ("POST", "/raw", [], b""),
        ("GET", "/stream", [], None),
        ("GET", "/stream?n=50", [], None),
        ("GET", "/stream?n=0", [], None),
        ("POST", "/background?tag=one", [], b""),
        ("GET", "/headers", [("X-Test", "t1"), ("Cookie", "a=1; b=2")], None),
        ("GET", "/headers", [("X-Test", "caf\u00e9".encode().decode("latin-1"))], None),
        ("GET", "/cookie", [], None),
        ("GET", "/redirect", [], None),
        ("GET", "/status/201", [], None),
        ("GET", "/status/204", [], None),
        ("GET", "/status/404", [], None),
        ("GET", "/status/418", [], None),
        ("GET", "/status/503", [], None),
        ("GET", "/error", [], None),
        ("GET", "/nope", [], None),
        ("GET", "/nope/%C3%A9", [], None),
        ("DELETE", "/", [], None),
        ("OPTIONS", "/items/1", [], None),
        ("GET", "/docs", [], None),
        ("GET", "/openapi.json", [], None),
        ("GET", "/cpp/hello", [], None),
        ("GET", "/cpp/echo/a%20b?x=1", [("X-Test", "cpp")], None),
        ("POST", "/cpp/echo/post", [("Content-Type", "text/plain")], b"body to C++"),
        ("POST", "/cpp/echo/big", [("Content-Type", "application/octet-stream")], BIG),
        ("GET", "/cpp/stream", [], None),
        ("GET", "/cpp/nope", [], None),
        ("HEAD", "/cpp/hello", [], None),
    ]
    return requests


def test_the_corpus_has_at_least_50_requests():
    assert len(corpus()) >= 50


def start_csgi(server_factory, csgi_bin, tmp_path, *extra, env=None):
    port = free_port()
    full = {"ASGI_TEST_DIR": str(tmp_path), "CSGI_TEST_APPS": os.environ.get("CSGI_TEST_APPS", "")}
    full.update(env or {})
    return server_factory([csgi_bin, "serve", "--asgi", "fastapi_site:app", "--listen", "127.0.0.1:%d" % port]
                          + list(extra), port, cwd=HERE, env=full)


def test_csgi_and_uvicorn_answer_alike(server_factory, csgi_bin, tmp_path):
    pytest.importorskip("uvicorn")
    a_dir, b_dir = tmp_path / "csgi", tmp_path / "uvicorn"
    a_dir.mkdir()
    b_dir.mkdir()
    csgi = start_csgi(server_factory, csgi_bin, a_dir)
    p2 = free_port()
    env = {"ASGI_TEST_DIR": str(b_dir), "CSGI_TEST_APPS": os.environ.get("CSGI_TEST_APPS", "")}
    server_factory([PYTHON, "-m", "uvicorn", "fastapi_site:app", "--port", str(p2), "--log-level", "warning"],
                   p2, cwd=HERE, env=env)
    mismatches = []
    requests = corpus() + [("GET", "/background-result", [], None)]
    for method, path, headers, body in requests:
        a = fetch(csgi.port, method, path, headers, body)
        b = fetch(p2, method, path, headers, body)
        ha, la = normalise(a[1], csgi.port)
        hb, lb = normalise(b[1], p2)
        where = "%s %s" % (method, path)
        if a[0] != b[0]:
            mismatches.append("%s: status %d vs uvicorn %d" % (where, a[0], b[0]))
        if ha != hb:
            mismatches.append("%s: headers\n  csgi    %r\n  uvicorn %r" % (where, ha, hb))
        if la and lb and la != lb:
            mismatches.append("%s: Content-Length %r vs %r" % (where, la, lb))
        if a[2] != b[2]:
            mismatches.append("%s: body %d bytes %s vs %d bytes %s" % (
                where, len(a[2]), hashlib.sha1(a[2]).hexdigest()[:10], len(b[2]),
                hashlib.sha1(b[2]).hexdigest()[:10]))
    assert not mismatches, "\n".join(mismatches) + "\n--- csgi log:\n" + csgi.output()[-3000:]
    assert (a_dir / "background.txt").read_text() == "done one\n"


def lines(path):
    return path.read_text().split() if path.exists() else []


def test_csgi_serve_asgi_is_run_by_the_python_program(server_factory, csgi_bin, tmp_path):
    """Alone, --asgi is served by the Python program (the same pid, named csgi: /proc/PID/exe is python3),
    with the command line as given; with a layer mode, or CSGI_PYTHON_EMBED set, by csgi with embedded
    Python."""
    python = os.path.realpath(PYTHON)
    cases = [((), {}, python), (("--threads", "2", "--app-arg", "x"), {}, python),
             (("--health",), {}, os.path.realpath(csgi_bin)), ((), {"CSGI_PYTHON_EMBED": "1"}, os.path.realpath(csgi_bin))]
    for extra, env, program in cases:
        srv = start_csgi(server_factory, csgi_bin, tmp_path, *extra, env=env)
        assert fetch(srv.port, "GET", "/items/3")[2] == b'{"item_id":3,"q":null,"n":1}', srv.output()[-2000:]
        assert os.path.realpath("/proc/%d/exe" % srv.proc.pid) == program, (extra, env)
        if program == python:
            with open("/proc/%d/comm" % srv.proc.pid) as f:
                assert f.read().strip() == "csgi"
            with open("/proc/%d/cmdline" % srv.proc.pid, "rb") as f:
                cmdline = f.read().split(b"\0")[:-1]
            want = [b"csgi", b"serve", b"--asgi", b"fastapi_site:app", b"--listen", b"127.0.0.1:%d" % srv.port]
            assert cmdline[-len(want) - len(extra):] == want + [e.encode() for e in extra], cmdline
        srv.stop()
        assert srv.proc.returncode == 0, srv.output()[-2000:]


@pytest.mark.parametrize("workers", [0, 2])
def test_lifespan_once_per_worker(server_factory, csgi_bin, tmp_path, workers):
    srv = start_csgi(server_factory, csgi_bin, tmp_path, "--workers", str(workers))
    for _ in range(20):
        assert fetch(srv.port, "GET", "/")[0] == 200
    deadline = time.monotonic() + 10  # each worker starts on its own, after the master listens
    while len(lines(tmp_path / "lifespan.txt")) < 2 * max(workers, 1) and time.monotonic() < deadline:
        time.sleep(0.05)
    started = (tmp_path / "lifespan.txt").read_text().splitlines()
    assert len(started) == max(workers, 1) and all(s.startswith("startup ") for s in started)
    pids = {s.split()[1] for s in started}
    assert len(pids) == len(started)
    if workers == 0:
        assert pids == {str(srv.proc.pid)}
    else:
        assert str(srv.proc.pid) not in pids  # the master runs no lifespan
    srv.stop()
    assert srv.proc.returncode == 0
    stopped = [s for s in (tmp_path / "lifespan.txt").read_text().splitlines() if s.startswith("shutdown ")]
    assert {s.split()[1] for s in stopped} == pids and len(stopped) == len(pids)


@pytest.mark.parametrize("workers", [0, 2])
def test_failing_startup_stops_the_server(csgi_bin, tmp_path, workers):
    env = dict(os.environ, ASGI_TEST_DIR=str(tmp_path), ASGI_FAIL_STARTUP="1",
               PYTHONPATH=os.pathsep.join([HERE, os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run([csgi_bin, "serve", "--asgi", "fastapi_site:app", "--listen", "127.0.0.1:%d" % free_port(),
                        "--workers", str(workers)], cwd=HERE, env=env, capture_output=True, text=True, timeout=60)
    assert "startup refused by the test" in r.stderr and "Traceback" in r.stderr
    if workers == 0:
        assert r.returncode == 1 and "listening" not in r.stdout
    else:  # the master listens first; the first worker that cannot start stops it, none is restarted
        assert r.returncode == 3 and "could not start the app" in r.stderr
        assert r.stderr.count("startup refused by the test") <= 2 * workers


@pytest.mark.parametrize("embed", ["", "1"])
def test_an_app_that_cannot_be_imported_is_named(csgi_bin, tmp_path, embed):
    """Served by python3 or embedded, the same words and status when the module raises."""
    (tmp_path / "broken_asgi.py").write_text("raise RuntimeError('broken on import')\n")
    env = dict(os.environ, CSGI_PYTHON_EMBED=embed)
    r = subprocess.run([csgi_bin, "serve", "--asgi", "broken_asgi:app", "--listen", "127.0.0.1:%d" % free_port()],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 1, r.stderr
    assert "RuntimeError: broken on import" in r.stderr and "Traceback" in r.stderr
    assert "csgi: --asgi: cannot load the ASGI app broken_asgi:app" in r.stderr


def read_some_and_leave(port, path, size=300000):
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(b"GET " + path + b" HTTP/1.1\r\nHost: x\r\n\r\n")
        got = 0
        while got < size:
            data = s.recv(65536)
            assert data
            got += len(data)


def test_client_leaving_a_streaming_response(server_factory, csgi_bin, tmp_path):
    srv = start_csgi(server_factory, csgi_bin, tmp_path)
    # A StreamingResponse: Starlette sees http.disconnect from receive() and cancels the stream.
    read_some_and_leave(srv.port, b"/endless")
    counts = []
    for _ in range(2):
        time.sleep(0.5)
        counts.append(json.loads(fetch(srv.port, "GET", "/endless-count")[2])["endless"])
    assert counts[0] == counts[1] < 100000
    # A raw ASGI app that only sends: send() raises an OSError once the client has gone.
    read_some_and_leave(srv.port, b"/endless-raw/")
    deadline = time.monotonic() + 10
    while not lines(tmp_path / "endless.txt") and time.monotonic() < deadline:
        time.sleep(0.05)
    text = (tmp_path / "endless.txt").read_text()
    assert text.startswith("send raised ClientDisconnected after ") and int(text.split()[-1]) < 100000
    assert fetch(srv.port, "GET", "/")[0] == 200
    assert "Traceback" not in srv.output()


def test_raise_after_response_start(server_factory, csgi_bin, tmp_path):
    srv = start_csgi(server_factory, csgi_bin, tmp_path)
    c = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=10)
    c.request("GET", "/raise-after-start/")
    r = c.getresponse()
    assert r.status == 200
    with pytest.raises(http.client.IncompleteRead):
        r.read()
    c.close()
    assert fetch(srv.port, "GET", "/items/3")[2] == b'{"item_id":3,"q":null,"n":1}'
    deadline = time.monotonic() + 5
    while "raised after http.response.start" not in srv.output() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "raised after http.response.start" in srv.output()
    assert 'csgi: response cut short for "GET /raise-after-start/ HTTP/1.1": the ASGI app raised:\nTraceback' \
        in srv.output(), srv.output()


def test_request_body_disconnect_reaches_the_app(server_factory, csgi_bin, tmp_path):
    srv = start_csgi(server_factory, csgi_bin, tmp_path, "--max-body-bytes", "100000000")
    with socket.create_connection(("127.0.0.1", srv.port)) as s:
        s.sendall(b"POST /raw HTTP/1.1\r\nHost: x\r\nContent-Length: 10000000\r\n\r\n" + b"a" * 3000000)
        time.sleep(0.3)
    assert fetch(srv.port, "GET", "/")[0] == 200


SERVE_SCRIPT = r'''
import sys
import csgi
import fastapi_site
app = csgi.Builder().use(csgi.mw.runtime()).to_app(fastapi_site.app)
sys.exit(csgi.serve(app, listen="127.0.0.1:%s" % sys.argv[1]))
'''


def test_cxx_middleware_in_front_of_an_asgi_app(server_factory, tmp_path):
    script = tmp_path / "serve_asgi.py"
    script.write_text(SERVE_SCRIPT)
    port = free_port()
    srv = server_factory([PYTHON, str(script), str(port)], port, cwd=HERE,
                         env={"ASGI_TEST_DIR": str(tmp_path), "CSGI_TEST_APPS": ""})
    status, headers, body = fetch(port, "GET", "/items/5?q=x")
    assert (status, body) == (200, b'{"item_id":5,"q":"x","n":1}')
    assert any(k.lower() == "x-runtime" for k, _ in headers)
    assert fetch(port, "GET", "/stream?n=3")[2] == b"line 0\nline 1\nline 2\n"
    srv.stop()
    assert "startup %d" % srv.proc.pid in (tmp_path / "lifespan.txt").read_text()
    assert "shutdown %d" % srv.proc.pid in (tmp_path / "lifespan.txt").read_text()


RAW_APP = r'''
import asyncio, inspect, sys
import csgi


async def app(scope, receive, send):
    """Drives receive()/send() the ways ASGI code may: by hand through __await__(), wrapped by
    ensure_future(), awaited; a bytearray body and a list of header lists take the general path."""
    if scope["type"] != "http":
        return
    r = receive()
    assert inspect.isawaitable(r)
    it = r.__await__()
    try:
        it.send(None)
        raise AssertionError("receive() suspended with its body at hand")
    except StopIteration as stop:
        message = stop.value
    assert message == {"type": "http.request", "body": scope["path"].encode(), "more_body": False} or \
        message["body"] == b""
    headers = [[b"content-type", b"text/plain"]] if scope["path"] == "/lists" else [(b"content-type", b"text/plain")]
    await asyncio.ensure_future(send({"type": "http.response.start", "status": 201, "headers": headers}))
    body = bytearray(b"ok " + scope["method"].encode()) if scope["path"] == "/lists" else b"ok " + scope["method"].encode()
    await send({"type": "http.response.body", "body": body})
    try:
        await send({"type": "http.response.body", "body": b"again"})
    except RuntimeError as e:
        sys.stderr.write("second body refused: %s\n" % e)

sys.exit(csgi.serve(app, listen="127.0.0.1:%s" % sys.argv[1]))
'''


def test_receive_and_send_are_awaitables_of_every_kind(server_factory, tmp_path):
    script = tmp_path / "raw_app.py"
    script.write_text(RAW_APP)
    port = free_port()
    srv = server_factory([PYTHON, str(script), str(port)], port, cwd=HERE, env={"CSGI_TEST_APPS": ""})
    for path in ("/plain", "/lists"):
        status, headers, body = fetch(port, "GET", path)
        assert (status, body) == (201, b"ok GET"), srv.output()[-2000:]
        assert ("content-type", "text/plain") in [(k.lower(), v) for k, v in headers]
    assert fetch(port, "POST", "/plain", body=b"/plain")[:3:2] == (201, b"ok POST")
    deadline = time.monotonic() + 5
    while srv.output().count("second body refused") < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert srv.output().count("second body refused: http.response.body after the last one") == 3


ADDRESS_APP = r"""
import sys
import csgi


async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    body = repr((scope["server"], scope["client"][0])).encode()
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": body})

sys.exit(csgi.serve(app, listen="127.0.0.1:%s" % sys.argv[1]))
"""


def test_scope_server_and_client_follow_each_request(server_factory, tmp_path):
    """scope["server"] names each request's Host, scope["client"] its peer: one request's values never
    show in the next one's scope."""
    script = tmp_path / "address_app.py"
    script.write_text(ADDRESS_APP)
    port = free_port()
    server_factory([PYTHON, str(script), str(port)], port, cwd=HERE, env={"CSGI_TEST_APPS": ""})

    def get(host, peer):
        with socket.create_connection(("127.0.0.1", port), source_address=(peer, 0)) as s:
            s.sendall(b"GET / HTTP/1.1\r\nHost: " + host + b"\r\nConnection: close\r\n\r\n")
            data = b""
            while chunk := s.recv(65536):
                data += chunk
        return data.split(b"\r\n\r\n", 1)[1]

    for host, peer in [(b"a.example:8080", "127.0.0.1"), (b"a.example:8080", "127.0.0.2"), (b"b.example", "127.0.0.2"),
                       (b"c.example:82", "127.0.0.2"), (b"a.example", "127.0.0.1")]:
        want = ((host.split(b":")[0].decode(), port), peer)  # SERVER_PORT: the port the request came in on
        assert get(host, peer) == repr(want).encode(), (host, peer)


HEADERS_APP = r"""
import sys
import csgi

prev = {"headers": {}, "path": None}


async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    headers = [(k, v) for k, v in scope["headers"] if k.startswith(b"x-")]
    # Which of this scope's objects are the very ones the previous request's scope held.
    same = [t[0].decode() for t in scope["headers"] if prev["headers"].get(t[0]) is t]
    same = sorted(same + (["path"] if scope["path"] is prev["path"] else []))
    prev["headers"] = {t[0]: t for t in scope["headers"]}
    prev["path"] = scope["path"]
    body = repr((scope["path"], scope["raw_path"], scope["query_string"], headers, same)).encode()
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": body})

sys.exit(csgi.serve(app, listen="127.0.0.1:%s" % sys.argv[1]))
"""


def test_scope_headers_and_path_follow_each_request(server_factory, tmp_path):
    """Each scope holds its own request's header values, path and query, whatever came before it on the
    same or another connection; an unchanged header, and the path, are the objects of the last scope."""
    script = tmp_path / "headers_app.py"
    script.write_text(HEADERS_APP)
    port = free_port()
    server_factory([PYTHON, str(script), str(port)], port, cwd=HERE, env={"CSGI_TEST_APPS": ""})
    conn = socket.create_connection(("127.0.0.1", port), timeout=10)

    def get(target, headers):
        head = "GET %s HTTP/1.1\r\nHost: h\r\n" % target + "".join("%s: %s\r\n" % kv for kv in headers)
        conn.sendall(head.encode() + b"\r\n")
        data = b""
        while b"\r\n\r\n" not in data:
            data += conn.recv(65536)
        head, body = data.split(b"\r\n\r\n", 1)
        length = int(re.search(rb"(?i)content-length: *(\d+)", head).group(1))
        while len(body) < length:
            body += conn.recv(65536)
        return eval(body)  # noqa: S307 - the test app's repr

    long_value = "v" * 300
    steps = [
        ("/a?x=1", [("X-One", "1"), ("X-Two", "2")]),
        ("/a?x=1", [("X-One", "1"), ("X-Two", "two")]),
        ("/b", [("X-Two", "two")]),
        ("/b?y", [("X-One", "1"), ("X-Long", long_value)]),
        ("/b?y", [("X-One", "1"), ("X-Long", long_value + "w")]),
        ("/caf%C3%A9", [("X-One", "")]),
        ("/caf%C3%A9", [("X-One", "1")]),
    ]
    # Past the names kept for reuse: 600 made-up header names, 40 to a request.
    steps += [("/many", [("X-N%d" % (i + j), str(i)) for j in range(40)]) for i in range(0, 600, 40)]
    steps += [("/a?x=1", [("X-One", "1"), ("X-Two", "two")])]
    for target, headers in steps:
        path, _, query = target.partition("?")
        got = get(target, headers)
        want_path = urllib.parse.unquote(path)
        assert got[:4] == (want_path, path.encode(), query.encode(),
                           [(k.lower().encode(), v.encode()) for k, v in headers]), (target, headers)
    conn.close()
    # Unchanged since the previous request: x-one's tuple and the path are reused; x-two changed.
    conn = socket.create_connection(("127.0.0.1", port), timeout=10)
    get("/same", [("X-One", "1"), ("X-Two", "2")])
    assert get("/same", [("X-One", "1"), ("X-Two", "3")])[4] == ["host", "path", "x-one"]
    conn.close()


TRAILERS_APP = r'''
async def app(scope, receive, send):
    """Trailer fields (the http.response.trailers extension) after a whole and a streamed body, sent only
    when the scope offers the extension."""
    if scope["type"] != "http":
        return
    await receive()
    offered = "http.response.trailers" in scope.get("extensions", {})
    await send({"type": "http.response.start", "status": 200, "trailers": offered,
                "headers": [(b"content-type", b"text/plain"), (b"trailer", b"x-checksum, x-count")]})
    if scope["path"] == "/whole":
        await send({"type": "http.response.body", "body": b"one two three"})
    else:
        for chunk in (b"one ", b"two ", b"three"):
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b""})
    if offered:
        await send({"type": "http.response.trailers", "headers": [(b"x-checksum", b"abc")], "more_trailers": True})
        await send({"type": "http.response.trailers", "headers": [(b"x-count", b"3")]})
'''


def raw_exchange(port, request):
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(request)
        data = b""
        while True:
            got = s.recv(65536)
            if not got:
                return data
            data += got


def dechunk(body):
    """The data of a chunked body (up to its last chunk)."""
    out = b""
    while True:
        size, _, rest = body.partition(b"\r\n")
        n = int(size, 16)
        if n == 0:
            return out
        out += rest[:n]
        body = rest[n + 2:]


def h2_exchange(port, path):
    """One GET over h2c (prior knowledge): (status, body, trailers or None)."""
    h2 = pytest.importorskip("h2.connection")
    import h2.events
    conn = h2.connection.H2Connection()
    status, body, trailers, ended = None, b"", None, False
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        conn.initiate_connection()
        conn.send_headers(1, [(":method", "GET"), (":path", path), (":scheme", "http"), (":authority", "x")],
                          end_stream=True)
        s.sendall(conn.data_to_send())
        while not ended:
            data = s.recv(65536)
            if not data:
                break
            for e in conn.receive_data(data):
                if isinstance(e, h2.events.ResponseReceived):
                    status = dict(e.headers)[b":status"]
                elif isinstance(e, h2.events.DataReceived):
                    body += e.data
                    conn.acknowledge_received_data(e.flow_controlled_length, e.stream_id)
                elif isinstance(e, h2.events.TrailersReceived):
                    trailers = dict(e.headers)
                elif isinstance(e, h2.events.StreamEnded):
                    ended = True
            s.sendall(conn.data_to_send())
    return status, body, trailers


def test_response_trailers_over_chunked_and_h2(server_factory, csgi_bin, tmp_path):
    (tmp_path / "trailers_app.py").write_text(TRAILERS_APP)
    port = free_port()
    srv = server_factory([csgi_bin, "serve", "--asgi", "trailers_app:app", "--listen", "127.0.0.1:%d" % port],
                         port, cwd=tmp_path, env={"PYTHONPATH": os.pathsep.join([str(tmp_path), HERE]),
                                                  "CSGI_TEST_APPS": ""})
    for path in ("/whole", "/streamed"):
        got = raw_exchange(port, b"GET " + path.encode() + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        head, _, body = got.partition(b"\r\n\r\n")
        assert b"transfer-encoding: chunked" in head.lower(), got
        assert body.endswith(b"0\r\nx-checksum: abc\r\nx-count: 3\r\n\r\n"), (path, got, srv.output()[-2000:])
        assert dechunk(body) == b"one two three", got
        status, h2_body, trailers = h2_exchange(port, path)
        assert (status, h2_body) == (b"200", b"one two three"), srv.output()[-2000:]
        assert trailers == {b"x-checksum": b"abc", b"x-count": b"3"}, (path, trailers)
        # HTTP/1.0 and HEAD carry no trailers (ADP-17): the body alone, and the app is not failed.
        got = raw_exchange(port, b"GET " + path.encode() + b" HTTP/1.0\r\nHost: x\r\n\r\n")
        assert got.partition(b"\r\n\r\n")[2] == b"one two three", got
        got = raw_exchange(port, b"HEAD " + path.encode() + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        assert got.startswith(b"HTTP/1.1 200") and got.partition(b"\r\n\r\n")[2] == b"", got
    assert "Traceback" not in srv.output() and "csgi: the ASGI app" not in srv.output(), srv.output()[-3000:]


BARRIER_APP = r'''
import asyncio, sys
import csgi

N = int(sys.argv[2])
arrived = 0
event = None


async def app(scope, receive, send):
    """Holds every request until N have arrived, so that all N finish in the same pass of the loop."""
    global arrived, event
    if scope["type"] != "http":
        return
    if event is None:
        event = asyncio.Event()
    arrived += 1
    if arrived == N:
        event.set()
    await event.wait()
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": scope["path"].encode()})

sys.exit(csgi.serve(app, listen="127.0.0.1:%s" % sys.argv[1]))
'''


def test_many_responses_completed_in_one_loop_pass(server_factory, tmp_path):
    """Complete responses finished together are answered together: each reaches its own client, more of
    them than the bridge holds back at once."""
    import concurrent.futures
    n = 40
    script = tmp_path / "barrier_app.py"
    script.write_text(BARRIER_APP)
    port = free_port()
    srv = server_factory([PYTHON, str(script), str(port), str(n)], port, cwd=HERE, env={"CSGI_TEST_APPS": ""})
    with concurrent.futures.ThreadPoolExecutor(n) as pool:
        got = list(pool.map(lambda i: fetch(port, "GET", "/r%d" % i), range(n)))
    assert [(status, body) for status, _, body in got] == [(200, b"/r%d" % i) for i in range(n)], srv.output()[-2000:]


SCOPE_HEADERS_APP = r"""
import sys
import csgi


async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    body = repr(sorted(scope["headers"])).encode()
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": body})

sys.exit(csgi.serve(app, listen="127.0.0.1:%s" % sys.argv[1]))
"""


def test_scope_headers_keep_to_the_header_rule(server_factory, tmp_path):
    """An ASGI app on the csgi server gets the fields csgi serve gives an env key (spec ENV-10, ENV-11): no
    name with '_', no Proxy, no content_length."""
    script = tmp_path / "scope_headers_app.py"
    script.write_text(SCOPE_HEADERS_APP)
    port = free_port()
    server_factory([PYTHON, str(script), str(port)], port, cwd=HERE, env={"CSGI_TEST_APPS": ""})
    status, _, body = fetch(port, "GET", "/", conftest.SMUGGLED)
    assert status == 200, body
    fields = eval(body)  # noqa: S307 - the test app's repr
    assert (b"x-remote-user", b"alice") in fields, body
    assert not any(b"_" in n or n in (b"proxy", b"content-length") for n, _ in fields), body


SLOW_BODY_APP = r'''
async def app(scope, receive, send):
    if scope["type"] == "lifespan":
        while True:
            m = await receive()
            if m["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif m["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    if scope["type"] != "http":
        return
    body = b""
    if scope["path"] == "/upload":
        while True:
            m = await receive()
            body += m.get("body", b"")
            if not m.get("more_body"):
                break
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": b"got %d" % len(body)})
'''


BIG_UPLOAD = 2 << 20


@pytest.mark.parametrize("framing", ["chunked", "length"])
def test_a_slow_upload_does_not_stop_other_clients(server_factory, csgi_bin, tmp_path, framing):
    """An upload that comes slowly to an ASGI app that reads it holds no io thread: another client is
    answered while the upload is still under way (one io thread). Chunked, and a Content-Length past
    --body-buffer-bytes."""
    (tmp_path / "slow_body_app.py").write_text(SLOW_BODY_APP)
    port = free_port()
    srv = server_factory([csgi_bin, "serve", "--asgi", "slow_body_app:app", "--threads", "1",
                          "--listen", "127.0.0.1:%d" % port],
                         port, cwd=tmp_path, env={"PYTHONPATH": os.pathsep.join([str(tmp_path), HERE]),
                                                  "CSGI_TEST_APPS": ""})
    if framing == "chunked":
        head, first, rest, size = (b"POST /upload HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n",
                                   b"5\r\nhello\r\n", b"6\r\n world\r\n0\r\n\r\n", 11)
    else:
        head, first, rest, size = (b"POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % BIG_UPLOAD,
                                   b"u" * 1000, b"u" * (BIG_UPLOAD - 1000), BIG_UPLOAD)
    want = b"got %d" % size
    with socket.create_connection(("127.0.0.1", port), timeout=10) as a:
        a.sendall(head + first)
        time.sleep(0.3)  # the upload's head is in before the other client asks
        with socket.create_connection(("127.0.0.1", port), timeout=5) as b:
            b.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            got = b""
            try:
                while not got.endswith(b"got 0"):
                    more = b.recv(65536)
                    if not more:
                        break
                    got += more
            except socket.timeout:
                pass
        assert got.startswith(b"HTTP/1.1 200") and got.endswith(b"got 0"), (got, srv.output()[-2000:])
        a.sendall(rest)
        data = b""
        while not data.endswith(want):
            more = a.recv(65536)
            if not more:
                break
            data += more
        assert data.startswith(b"HTTP/1.1 200") and data.endswith(want), data
