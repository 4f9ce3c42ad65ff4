"""`python3 -m csgi serve --wsgi|--asgi MODULE:APP`: the csgi server run by /usr/bin/python3 itself, with the
command line of `csgi serve` (the runner's option table): WSGI and ASGI apps, workers, a graceful stop on
SIGTERM, usage errors and exit statuses, --reload; and csgi.serve(options=[...]) read by the same parser."""
import json
import os
import re
import signal
import socket
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from conftest import PYTHON, free_port

WSGI_APP = '''
import json, os, sys, time
def application(environ, start_response):
    if environ["PATH_INFO"] == "/slow":
        time.sleep(1.0)
    with open("/proc/self/maps") as f:
        libpython = any("libpython3" in line for line in f)
    body = json.dumps({"pid": os.getpid(), "argv": sys.argv, "executable": sys.executable,
                       "libpython": libpython, "path": environ["PATH_INFO"],
                       "script_name": environ["SCRIPT_NAME"]}).encode()
    start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
    return [body]
'''

ASGI_APP = '''
import json, os
async def app(scope, receive, send):
    if scope["type"] == "lifespan":
        while True:
            m = await receive()
            if m["type"] == "lifespan.startup":
                scope["state"]["started"] = os.getpid()
                await send({"type": "lifespan.startup.complete"})
            else:
                with open("shutdown.%d" % os.getpid(), "w") as f:
                    f.write("done")
                await send({"type": "lifespan.shutdown.complete"})
                return
    body = json.dumps({"pid": os.getpid(), "path": scope["path"],
                       "started": scope["state"].get("started")}).encode()
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": body})
'''


def start(server_factory, tmp_path, *args):
    port = free_port()
    argv = [PYTHON, "-m", "csgi", "serve", "--listen", "127.0.0.1:%d" % port] + list(args)
    return server_factory(argv, port, cwd=tmp_path)


def get_json(server, path):
    status, _, body = server.request("GET", path)
    assert status == 200, (status, body, server.output())
    return json.loads(body)


def test_a_wsgi_app_in_python3_itself_with_the_options_of_csgi_serve(server_factory, tmp_path):
    (tmp_path / "wapp.py").write_text(WSGI_APP)
    server = start(server_factory, tmp_path, "--wsgi", "wapp:application", "--script-name", "/app",
                   "--app-arg", "one", "--app-arg", "two", "--max-body-bytes", "10")
    got = get_json(server, "/app/x")
    assert got["path"] == "/x" and got["script_name"] == "/app"
    assert got["argv"] == ["csgi", "one", "two"]
    assert got["pid"] == server.proc.pid
    # served by the Python program that ran -m csgi, not by an embedded libpython
    assert os.path.realpath(got["executable"]) == os.path.realpath(PYTHON)
    assert got["libpython"] is False
    assert server.request("GET", "/other")[0] == 404  # --script-name
    assert server.request("POST", "/app/x", body=b"x" * 11)[0] == 413  # --max-body-bytes
    assert "csgi: listening on http://127.0.0.1:%d/" % server.port in server.output()


def test_sigterm_finishes_the_request_in_flight_and_exits_0(server_factory, tmp_path):
    (tmp_path / "wapp.py").write_text(WSGI_APP)
    server = start(server_factory, tmp_path, "--wsgi", "wapp:application", "--graceful-timeout", "10")
    get_json(server, "/warm")
    with ThreadPoolExecutor(1) as pool:
        slow = pool.submit(server.request, "GET", "/slow")
        time.sleep(0.3)
        os.kill(server.proc.pid, signal.SIGTERM)
        status, _, body = slow.result(timeout=20)
    assert status == 200 and json.loads(body)["path"] == "/slow"
    assert server.proc.wait(timeout=20) == 0, server.output()


def test_an_asgi_app_with_workers_and_lifespan(server_factory, tmp_path):
    (tmp_path / "aapp.py").write_text(ASGI_APP)
    server = start(server_factory, tmp_path, "--asgi", "aapp:app", "--workers", "2")
    pids = set()
    deadline = time.monotonic() + 30
    with ThreadPoolExecutor(4) as pool:
        # Bounded in count and time: a worker still starting its interpreter takes no connection yet.
        for _ in range(2000):
            if time.monotonic() > deadline:
                break
            for got in pool.map(lambda _: get_json(server, "/w"), range(4)):
                assert got["path"] == "/w" and got["started"] == got["pid"]  # lifespan ran in the worker
                pids.add(got["pid"])
            if len(pids) == 2:
                break
    assert len(pids) == 2 and server.proc.pid not in pids
    server.stop()
    assert server.proc.returncode == 0, server.output()
    for pid in pids:  # the lifespan shutdown ran in each worker
        assert (tmp_path / ("shutdown.%d" % pid)).read_text() == "done"


def run(tmp_path, *args):
    env = dict(os.environ)
    return subprocess.run([PYTHON, "-m", "csgi"] + list(args), cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=60)


def test_usage_errors_exit_2_and_a_broken_app_exits_1(tmp_path):
    (tmp_path / "wapp.py").write_text(WSGI_APP)
    (tmp_path / "broken.py").write_text("import no_such_module_here\n")
    listen = ["--listen", "127.0.0.1:%d" % free_port()]
    r = run(tmp_path, "serve", "--wsgi", "wapp:application", "--no-such-option", *listen)
    assert r.returncode == 2 and "unknown or ambiguous option '--no-such-option'" in r.stderr, r.stderr
    r = run(tmp_path, "serve", "--wsgi", "wapp:application", "--threads", "0", *listen)
    assert r.returncode == 2 and "--threads" in r.stderr, r.stderr
    r = run(tmp_path, "serve", *listen)
    assert r.returncode == 2 and "give one of --wsgi MODULE:APP and --asgi MODULE:APP" in r.stderr, r.stderr
    r = run(tmp_path, "serve", "--wsgi", "wapp:application", "--asgi", "wapp:application", *listen)
    assert r.returncode == 2, r.stderr
    r = run(tmp_path, "frobnicate")
    assert r.returncode == 2 and "unknown command 'frobnicate'" in r.stderr, r.stderr
    r = run(tmp_path, "serve", "--wsgi", "broken:app", *listen)
    assert r.returncode == 1
    assert "ModuleNotFoundError: No module named 'no_such_module_here'" in r.stderr, r.stderr
    assert "--wsgi: cannot load the WSGI app broken:app" in r.stderr
    r = run(tmp_path, "--help")
    assert r.returncode == 0 and "--asgi MODULE:APP" in r.stdout and "--graceful-timeout" in r.stdout
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        r = run(tmp_path, "serve", "--wsgi", "wapp:application", "--listen", "127.0.0.1:%d" % port)
    assert r.returncode == 1 and r.stderr.strip(), r.stderr


def csgi_modes():
    """The modes of `csgi serve` (the MODES of `csgi --help`), from the built csgi program when there is one."""
    csgi = os.path.join(os.environ.get("CSGI_BUILD_DIR", ""), "adapters", "cli", "csgi")
    if not os.path.exists(csgi):
        return ["app", "demo", "static", "bundle", "health", "metrics"]
    manual = subprocess.run([csgi, "--help"], capture_output=True, text=True, timeout=30).stdout
    section = manual.split("\nMODES\n", 1)[1].split("\nOPTIONS\n", 1)[0]
    return re.findall(r"^    --([\w-]+)", section, re.M)


def test_the_modes_of_csgi_serve_are_refused_as_not_available_here(tmp_path):
    (tmp_path / "wapp.py").write_text(WSGI_APP)
    listen = ["--listen", "127.0.0.1:%d" % free_port()]
    modes = [m for m in csgi_modes() if m not in ("wsgi", "asgi")]
    assert "static" in modes
    for mode in modes:
        value = [] if mode in ("demo", "health", "metrics") else ["x"]
        r = run(tmp_path, "serve", "--wsgi", "wapp:application", "--" + mode, *value, *listen)
        assert r.returncode == 2 and ("--%s is not available here" % mode) in r.stderr, (mode, r.stderr)


def test_version_and_did_you_mean(tmp_path):
    r = run(tmp_path, "--version")
    assert r.returncode == 0 and re.fullmatch(r"csgi \d+\.\d+\.\d+ \(spec 1\.0\)\n", r.stdout), (r.stdout, r.stderr)
    r = run(tmp_path, "serve", "--wsgi", "wapp:application", "--wrokers", "2")
    assert r.returncode == 2 and "did you mean --workers?" in r.stderr, r.stderr


ASGI_HELLO = """
async def app(scope, receive, send):
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"asgi"})
"""


@pytest.mark.parametrize("given, module, kind", [("--asgi", "wapp:application", "a WSGI"),
                                                 ("--wsgi", "aapp:app", "an ASGI")])
def test_an_app_of_the_other_kind_is_refused_at_start(tmp_path, given, module, kind):
    (tmp_path / "wapp.py").write_text(WSGI_APP)
    (tmp_path / "aapp.py").write_text(ASGI_HELLO)
    listen = ["--listen", "127.0.0.1:%d" % free_port()]
    r = run(tmp_path, "serve", given, module, *listen)
    other = "--wsgi" if given == "--asgi" else "--asgi"
    assert r.returncode == 1 and ("%s is %s app" % (module, kind)) in r.stderr and \
        ("serve it with %s" % other) in r.stderr, r.stderr


def test_reload_imports_the_changed_module_in_new_workers(server_factory, tmp_path):
    (tmp_path / "rapp.py").write_text(WSGI_APP.replace('"path": environ', '"version": 1, "path": environ'))
    server = start(server_factory, tmp_path, "--wsgi", "rapp:application", "--reload")
    first = get_json(server, "/")
    assert first["version"] == 1 and first["pid"] != server.proc.pid
    (tmp_path / "rapp.py").write_text(WSGI_APP.replace('"path": environ', '"version": 2, "path": environ'))
    deadline = time.monotonic() + 30
    got = first
    while time.monotonic() < deadline and got.get("version") != 2:
        time.sleep(0.2)
        got = get_json(server, "/")
    assert got["version"] == 2 and got["pid"] != first["pid"], server.output()


SERVE_OPTIONS_SCRIPT = '''
import sys, csgi
def app(environ, start_response):
    body = environ["wsgi.input"].read()
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [body]
sys.exit(csgi.serve(app, listen="127.0.0.1:" + sys.argv[1], options=["--max-body-bytes", "10"]))
'''


def test_csgi_serve_takes_the_options_of_csgi_serve(server_factory, tmp_path):
    import csgi

    def app(environ, start_response):
        start_response("200 OK", [])
        return []

    for bad, reason in [(["--no-such-option"], "unknown or ambiguous option"),
                        (["--max-requests", "5"], "--max-requests needs --workers"),
                        (["--fastcgi"], "serves HTTP"), (["--reload"], "--reload")]:
        with pytest.raises(ValueError, match=reason):
            csgi.serve(app, listen="127.0.0.1:0", options=bad)
    (tmp_path / "serve_options.py").write_text(SERVE_OPTIONS_SCRIPT)
    port = free_port()
    server = server_factory([PYTHON, "serve_options.py", str(port)], port, cwd=tmp_path)
    status, _, body = server.request("POST", "/", body=b"0123456789")
    assert status == 200 and body == b"0123456789"
    assert server.request("POST", "/", body=b"01234567890")[0] == 413  # --max-body-bytes
    server.stop()
    assert server.proc.returncode == 0, server.output()
