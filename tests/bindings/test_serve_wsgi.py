"""Python apps on the csgi servers: `csgi serve --wsgi module:app` (embedded Python) with a Django project
and plain WSGI apps, csgi.serve() from Python, worker processes, errors and close()."""
import json
import os
import re
import signal
import subprocess
import time

import pytest

from conftest import PYTHON, HERE, free_port, multipart


def serve_wsgi(server_factory, csgi_bin, spec, *extra, env=None):
    port = free_port()
    argv = [csgi_bin, "serve", "--wsgi", spec, "--listen", "127.0.0.1:%d" % port] + list(extra)
    return server_factory(argv, port, env=env, cwd=HERE)


def test_django_on_csgi_serve(server_factory, csgi_bin):
    server = serve_wsgi(server_factory, csgi_bin, "django_site:application", "--threads", "2")
    status, headers, body = server.request("GET", "/?x=1")
    assert status == 200, server.output()
    assert body == b"<h1>csgi django</h1><p>GET /?x=1</p>"
    h = dict(headers)
    assert h["Content-Type"] == "text/html; charset=utf-8" and h["X-Frame-Options"] == "DENY"
    assert h["Content-Length"] == str(len(body))

    status, _, body = server.request("GET", "/query?a=1&a=2&b=%C3%A9t%C3%A9")
    assert status == 200 and json.loads(body) == {"args": {"a": ["1", "2"], "b": ["\u00e9t\u00e9"]},
                                                  "path": "/query", "script": ""}
    status, _, body = server.request("POST", "/form", body="name=Ren%C3%A9&tag=a&tag=b",
                                     headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert status == 200 and json.loads(body)["form"] == {"name": ["Ren\u00e9"], "tag": ["a", "b"]}

    big = os.urandom(300000)  # over FILE_UPLOAD_MAX_MEMORY_SIZE: Django spools it to a temp file
    data, ctype = multipart([("note", "hello")], [("doc", "r\u00e9sum\u00e9.bin", big), ("small", "s.txt", b"abc")])
    status, _, body = server.request("POST", "/upload", body=data, headers={"Content-Type": ctype})
    assert status == 200, server.output()
    got = json.loads(body)
    assert got["fields"] == {"note": ["hello"]}
    assert got["files"]["doc"]["size"] == len(big) and got["files"]["doc"]["filename"] == "r\u00e9sum\u00e9.bin"
    import hashlib
    assert got["files"]["doc"]["sha256"] == hashlib.sha256(big).hexdigest()
    assert got["files"]["small"]["size"] == 3

    status, _, body = server.request("GET", "/caf%C3%A9/na%C3%AFve")
    assert status == 200 and body.decode() == "name=na\u00efve path=/caf\u00e9/na\u00efve"

    status, _, body = server.request("GET", "/missing")
    assert status == 404 and b"Not Found" in body
    status, _, _ = server.request("GET", "/no/such/route")
    assert status == 404
    status, _, body = server.request("GET", "/boom")  # DEBUG off: Django's own 500 page
    assert status == 500 and b"Server Error (500)" in body
    status, headers, _ = server.request("GET", "/slash")  # APPEND_SLASH
    assert status == 301 and dict(headers)["Location"] == "/slash/"
    status, headers, body = server.request("HEAD", "/")
    assert status == 200 and body == b""
    status, _, body = server.request("GET", "/stream")
    assert status == 200 and body == b"".join(b"line %d\n" % i for i in range(20))
    status, headers, body = server.request("GET", "/download")  # FileResponse → wsgi.file_wrapper
    assert status == 200 and body == bytes((i * 31 + 7) & 0xFF for i in range(200000))  # django_site.FILE_DATA
    status, headers, body = server.request("GET", "/cookie", headers={"Cookie": "visit=before"})
    assert status == 200 and body == b"seen=before" and "visit=yes" in dict(headers)["Set-Cookie"]
    for _ in range(20):  # bounded
        assert server.request("GET", "/query?n=1")[0] == 200


ERRORS_APP = '''
import os
closed = []

class Body:
    def __init__(self, parts, fail_at=None):
        self.parts, self.fail_at = parts, fail_at
    def __iter__(self):
        for i, p in enumerate(self.parts):
            if i == self.fail_at:
                raise ValueError("failed in the iterable")
            yield p
    def close(self):
        closed.append(1)

def application(environ, start_response):
    path = environ["PATH_INFO"]
    if path == "/raise":
        raise KeyError("raised by the WSGI app")
    if path == "/raise-in-body":
        start_response("200 OK", [("Content-Type", "text/plain")])
        return Body([b"a", b"b"], fail_at=0)
    if path == "/closed":
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [str(len(closed)).encode()]
    if path == "/pid":
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [str(os.getpid()).encode()]
    if path == "/cpu":
        n = sum(i * i for i in range(300000))
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [str(os.getpid()).encode()]
    if path == "/argv":
        import sys
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [" ".join(sys.argv).encode()]
    start_response("200 OK", [("Content-Type", "text/plain")])
    return Body([b"one ", b"two"])
'''


def test_exceptions_give_500_with_traceback_and_close_is_always_called(server_factory, csgi_bin, tmp_path):
    (tmp_path / "errapp.py").write_text(ERRORS_APP)
    port = free_port()
    server = server_factory([csgi_bin, "serve", "--wsgi", "errapp", "--listen", "127.0.0.1:%d" % port,
                             "--app-arg", "one", "--app-arg", "two"], port, cwd=tmp_path)
    assert server.request("GET", "/")[2] == b"one two"
    status, _, _ = server.request("GET", "/raise")
    assert status == 500
    status, _, _ = server.request("GET", "/raise-in-body")
    assert status == 500
    assert server.request("GET", "/closed")[2] == b"2"  # "/" and "/raise-in-body" were closed
    assert server.request("GET", "/argv")[2] == b"csgi one two"
    out = server.output()
    assert "Traceback (most recent call last)" in out and "KeyError: 'raised by the WSGI app'" in out
    assert 'csgi: 500 for "GET /raise HTTP/1.1": the WSGI app raised:\nTraceback (most recent call last)' in out, out
    assert "ValueError: failed in the iterable" in out
    server.stop()
    assert server.proc.returncode == 0


def test_workers_are_processes(server_factory, csgi_bin, tmp_path):
    (tmp_path / "errapp.py").write_text(ERRORS_APP)
    port = free_port()
    server = server_factory([csgi_bin, "serve", "--wsgi", "errapp:application", "--listen", "127.0.0.1:%d" % port,
                             "--workers", "2"], port, cwd=tmp_path)
    from concurrent.futures import ThreadPoolExecutor
    pids = set()
    with ThreadPoolExecutor(4) as pool:
        for _ in range(10):  # bounded; concurrent requests reach the worker that is not busy
            for status, _, body in pool.map(lambda _: server.request("GET", "/cpu"), range(4)):
                assert status == 200
                pids.add(int(body))
            if len(pids) == 2:
                break
    assert len(pids) == 2 and server.proc.pid not in pids
    assert server.request("GET", "/raise")[0] == 500  # the GIL and the interpreter work after fork
    server.stop()
    assert server.proc.returncode == 0


SLEEPY_APP = '''
import threading, time
def application(environ, start_response):
    if environ["PATH_INFO"] == "/slow":
        time.sleep(0.5)
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [("%r %d" % (environ["wsgi.multithread"], threading.get_ident())).encode()]
'''


@pytest.mark.parametrize("extra,moves", [([], True), (["--app-threads", "0"], False)])
def test_wsgi_apps_run_inline_until_a_call_blocks_then_on_a_pool(server_factory, csgi_bin, tmp_path, extra, moves):
    # One io thread. A quick app runs on it: every request on one thread. By default a call that blocks
    # past 2 ms (after a first slow call, which may be a set-up) moves the app to a pool of 8 for good:
    # /fast is then answered while /slow sleeps. With --app-threads 0 it stays inline: /fast waits.
    from concurrent.futures import ThreadPoolExecutor
    (tmp_path / "sleepy.py").write_text(SLEEPY_APP)
    port = free_port()
    server = server_factory([csgi_bin, "serve", "--wsgi", "sleepy", "--listen", "127.0.0.1:%d" % port,
                             "--threads", "1"] + extra, port, cwd=tmp_path)
    assert server.request("GET", "/fast")[0] == 200, server.output()

    def quick(_):
        return [server.request("GET", "/fast")[2] for _ in range(10)]

    with ThreadPoolExecutor(4) as pool:
        bodies = [b for got in pool.map(quick, range(4)) for b in got]
    assert len({b.split()[1] for b in bodies}) == 1, bodies
    assert {b.split()[0] for b in bodies} == {b"True" if moves else b"False"}
    for _ in range(2):
        assert server.request("GET", "/slow")[0] == 200
    with ThreadPoolExecutor(1) as pool:
        slow = pool.submit(server.request, "GET", "/slow")
        time.sleep(0.2)
        started = time.monotonic()
        status, _, body = server.request("GET", "/fast")
        waited = time.monotonic() - started
        assert slow.result()[0] == 200
    assert status == 200
    assert (waited > 0.2) != moves, waited
    moved = re.search(r"csgi: info: an app call waited on an io thread for [\d.]+ ms, so the app runs on the pool of "
                      r"8 app threads from now on, as suits an app that blocks or streams \(--app-threads 8 puts it",
                      server.output())
    assert bool(moved) == moves
    server.stop()
    assert server.proc.returncode == 0


@pytest.mark.parametrize("embed", ["", "1"])
def test_csgi_serve_wsgi_is_run_by_the_python_program(server_factory, csgi_bin, tmp_path, embed):
    """Alone, --wsgi is served by the Python program (the same pid, named csgi: /proc/PID/exe is python3);
    with CSGI_PYTHON_EMBED set, or a layer mode, by csgi with embedded Python. The app sees the same."""
    (tmp_path / "where.py").write_text(
        "import sys\ndef application(environ, start_response):\n"
        "    start_response('200 OK', [('Content-Type', 'text/plain')])\n"
        "    return [repr((sys.argv, environ['SERVER_PROTOCOL'], environ['wsgi.multithread'])).encode()]\n")
    for extra, program in [((), os.path.realpath(PYTHON) if not embed else os.path.realpath(csgi_bin)),
                           (("--health",), os.path.realpath(csgi_bin))]:
        port = free_port()
        server = server_factory([csgi_bin, "serve", "--wsgi", "where", "--listen", "127.0.0.1:%d" % port,
                                 "--app-arg", "x", *extra], port, cwd=tmp_path, env={"CSGI_PYTHON_EMBED": embed})
        status, _, body = server.request("GET", "/")
        assert status == 200 and body == b"(['csgi', 'x'], 'HTTP/1.1', True)", (body, server.output())
        assert os.path.realpath("/proc/%d/exe" % server.proc.pid) == program, (extra, embed)
        with open("/proc/%d/comm" % server.proc.pid) as f:
            assert f.read().strip() == "csgi"
        server.stop()
        assert server.proc.returncode == 0, server.output()


def test_a_bad_spec_fails_to_start_with_the_traceback(csgi_bin, tmp_path):
    (tmp_path / "broken.py").write_text("import no_such_module_here\n")
    r = subprocess.run([csgi_bin, "serve", "--wsgi", "broken:app", "--listen", "127.0.0.1:%d" % free_port()],
                       cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert r.returncode == 1
    assert "ModuleNotFoundError: No module named 'no_such_module_here'" in r.stderr
    assert "cannot load the WSGI app broken:app" in r.stderr


SERVE_SCRIPT = '''
import os, signal, sys, threading, csgi
def app(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [("%s %d" % (environ["PATH_INFO"], os.getpid())).encode()]
stack = csgi.Builder().use(csgi.mw.content_length()).to_app(app)
listening = []
rc = csgi.serve(stack, listen="127.0.0.1:" + sys.argv[1], threads=int(sys.argv[2]), workers=int(sys.argv[3]),
                on_listening=listening.append)
print("serve returned", rc, listening, flush=True)
# Python's own SIGINT handling is back: KeyboardInterrupt again.
try:
    os.kill(os.getpid(), signal.SIGINT)
    import time; time.sleep(5)
    print("no KeyboardInterrupt", flush=True)
except KeyboardInterrupt:
    print("KeyboardInterrupt after serve", flush=True)
'''


@pytest.mark.parametrize("threads,workers,sig", [(2, 0, signal.SIGINT), (1, 2, signal.SIGTERM)])
def test_csgi_serve_from_python(tmp_path, threads, workers, sig):
    script = tmp_path / "serve_it.py"
    script.write_text(SERVE_SCRIPT)
    port = free_port()
    env = dict(os.environ)
    proc = subprocess.Popen([PYTHON, str(script), str(port), str(threads), str(workers)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        import http.client
        deadline = time.monotonic() + 30
        body = None
        while time.monotonic() < deadline and body is None:
            try:
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                c.request("GET", "/x")
                r = c.getresponse()
                assert r.status == 200 and r.getheader("Content-Length")
                body = r.read()
                c.close()
            except OSError:
                time.sleep(0.05)
        assert body is not None and body.startswith(b"/x "), proc.poll()
        if workers:
            assert int(body.split()[1]) != proc.pid
        proc.send_signal(sig)
        out, _ = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, out
    assert "serve returned 0 ['http://127.0.0.1:%d/']" % port in out, out
    assert "KeyboardInterrupt after serve" in out, out


def test_csgi_serve_refuses_bad_arguments_and_a_busy_address():
    import socket
    import csgi

    def app(environ, start_response):
        start_response("200 OK", [])
        return []

    with pytest.raises(ValueError, match="threads"):
        csgi.serve(app, listen="127.0.0.1:0", threads=0)
    with pytest.raises(ValueError, match="script_name"):
        csgi.serve(app, listen="127.0.0.1:0", script_name="nope/")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        with pytest.raises(RuntimeError, match="csgi.serve: .*%d" % s.getsockname()[1]):
            csgi.serve(app, listen="127.0.0.1:%d" % s.getsockname()[1])
    # The server put Python's SIGINT handler back.
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
