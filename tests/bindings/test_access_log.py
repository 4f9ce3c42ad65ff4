"""csgi.mw.access_log: under a forking host (gunicorn --preload builds the C++ stack and its log writer in
the master and forks the workers) every request of every worker is logged and the workers stop at TERM;
csgi.reopen_logs() reopens its file after a rename."""
import os
import signal
import time

import pytest

from conftest import PYTHON, free_port

STACK = """
import os
import csgi
application = (csgi.Builder()
               .use(csgi.mw.access_log(os.environ["CSGI_TEST_LOG"], "common"))
               .run(csgi.load_app(os.environ["CSGI_TEST_APPS"], ["hello"]))
               .build())
"""


def wait_lines(path, n, timeout=5.0):
    deadline = time.monotonic() + timeout
    while True:
        text = ""
        if os.path.exists(path):
            with open(path) as f:
                text = f.read()
        if text.count("\n") >= n or time.monotonic() > deadline:
            return text.splitlines()
        time.sleep(0.05)


@pytest.mark.parametrize("preload", [True, False])
def test_gunicorn_workers_log_every_request_and_stop_at_term(server_factory, tmp_path, apps_lib, preload):
    (tmp_path / "logged_stack.py").write_text(STACK)
    log = str(tmp_path / "access.log")
    port = free_port()
    argv = [PYTHON, "-m", "gunicorn", "--bind", "127.0.0.1:%d" % port, "--workers", "2", "--chdir", str(tmp_path),
            "--graceful-timeout", "20", "--log-level", "warning"] + (["--preload"] if preload else []) + \
           ["logged_stack:application"]
    server = server_factory(argv, port, env={"CSGI_TEST_LOG": log})
    n = 40
    for i in range(n):
        status, _, body = server.request("GET", "/r%d" % i)
        assert status == 200, body
    lines = wait_lines(log, n)
    assert len(lines) == n, server.output()
    assert sorted(int(line.split('"GET /r')[1].split()[0]) for line in lines) == list(range(n))
    start = time.monotonic()
    os.killpg(server.proc.pid, signal.SIGTERM)
    try:
        rc = server.proc.wait(timeout=10)
    except Exception:
        rc = None
    took = time.monotonic() - start
    assert rc == 0 and took < 5, "gunicorn took %.1f s to stop at TERM (rc %r):\n%s" % (took, rc, server.output())


def test_reopen_logs_after_a_rename(tmp_path, load):
    import csgi
    import csgi.testing
    log = str(tmp_path / "access.log")
    app = csgi.Builder().use(csgi.mw.access_log(log, "%r")).run(load("hello")).build()
    assert csgi.testing.call(app, "GET /one").status == 200
    assert wait_lines(log, 1) == ["GET /one HTTP/1.1"]
    os.rename(log, log + ".1")
    assert csgi.reopen_logs() == []
    assert csgi.testing.call(app, "GET /two").status == 200
    assert wait_lines(log, 1) == ["GET /two HTTP/1.1"]
    assert wait_lines(log + ".1", 1) == ["GET /one HTTP/1.1"]


@pytest.mark.parametrize("workers", [[], ["--workers", "2"]])
def test_csgi_serve_wsgi_reopens_the_stacks_log_on_sigusr1(server_factory, csgi_bin, tmp_path, apps_lib, workers):
    """The writer lives in the extension's copy of csgi (not the program's): the server's SIGUSR1 reaches it."""
    (tmp_path / "logged_stack.py").write_text(STACK)
    log = str(tmp_path / "access.log")
    port = free_port()
    server = server_factory([csgi_bin, "serve", "--wsgi", "logged_stack:application",
                             "--listen", "127.0.0.1:%d" % port] + workers, port, env={"CSGI_TEST_LOG": log})
    for i in range(3):
        assert server.request("GET", "/before%d" % i)[0] == 200
    assert len(wait_lines(log, 3)) == 3
    os.rename(log, log + ".1")
    os.kill(server.proc.pid, signal.SIGUSR1)
    time.sleep(0.5)
    for i in range(3):
        assert server.request("GET", "/after%d" % i)[0] == 200
    new, old = wait_lines(log, 3), wait_lines(log + ".1", 3)
    assert len(new) == 3 and all("/after" in line for line in new), (new, server.output())
    assert len(old) == 3 and all("/before" in line for line in old), old
