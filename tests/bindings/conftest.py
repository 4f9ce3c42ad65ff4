"""Fixtures for the csgi Python binding tests: the test app library, free ports, servers on loopback."""
import glob
import http.client
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

import pytest

PYTHON = "/usr/bin/python3"
HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.fixture(scope="session")
def apps_lib():
    path = os.environ.get("CSGI_TEST_APPS")
    if not path or not os.path.exists(path):
        pytest.fail("CSGI_TEST_APPS must name libcsgi_pytest_apps.so (run through ctest)")
    return path


@pytest.fixture
def load(apps_lib):
    import csgi

    def _load(*args):
        return csgi.load_app(apps_lib, list(args))

    return _load


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from ports import free_port  # noqa: E402,F401


class Server:
    """A server process started from a command on 127.0.0.1:port; stopped (SIGTERM, then SIGKILL)."""

    def __init__(self, argv, port, cwd, env=None, log=None):
        self.port = port
        self.log_path = log or os.path.join(cwd, "server.log")
        self.log = open(self.log_path, "wb")
        full_env = dict(os.environ)
        full_env.update(env or {})
        self.proc = subprocess.Popen(argv, cwd=cwd, env=full_env, stdout=self.log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("server exited early:\n" + self.output())
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                    return
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError("server did not listen on %d:\n%s" % (port, self.output()))

    def output(self):
        self.log.flush()
        with open(self.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def request(self, method, path, body=None, headers=None, timeout=10):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            conn.request(method, path, body=body, headers=headers or {})
            r = conn.getresponse()
            return r.status, r.getheaders(), r.read()
        finally:
            conn.close()

    def stop(self):
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        self.log.close()


@pytest.fixture
def server_factory(tmp_path):
    started = []

    def start(argv, port, env=None, cwd=None):
        env = dict(env or {})
        env.setdefault("PYTHONPATH", os.pathsep.join(p for p in [os.environ.get("PYTHONPATH", ""), HERE] if p))
        s = Server(argv, port, str(cwd or tmp_path), env=env,
                   log=str(tmp_path / ("server%d.log" % len(started))))
        started.append(s)
        return s

    yield start
    for s in started:
        s.stop()


def fetch(port, method, path, headers=(), body=None):
    """One request on a connection of its own, headers sent as given (no Accept-Encoding added):
    (status, reason, headers, body)."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    try:
        c.putrequest(method, path, skip_accept_encoding=True)
        for k, v in headers:
            c.putheader(k, v)
        if body is not None:
            c.putheader("Content-Length", str(len(body)))
        c.endheaders(body)
        r = c.getresponse()
        return r.status, r.reason, r.getheaders(), r.read()
    finally:
        c.close()


def have(tool):
    return shutil.which(tool) is not None


def multipart(fields, files, boundary="csgiboundary1234"):
    out = b""
    for name, value in fields:
        out += ("--%s\r\nContent-Disposition: form-data; name=\"%s\"\r\n\r\n" % (boundary, name)).encode()
        out += value.encode() + b"\r\n"
    for name, filename, data in files:
        out += ("--%s\r\nContent-Disposition: form-data; name=\"%s\"; filename=\"%s\"\r\n"
                "Content-Type: application/octet-stream\r\n\r\n" % (boundary, name, filename)).encode("utf-8")
        out += data + b"\r\n"
    out += ("--%s--\r\n" % boundary).encode()
    return out, "multipart/form-data; boundary=" + boundary


@pytest.fixture(scope="session")
def csgi_bin():
    build = os.environ.get("CSGI_BUILD_DIR")
    path = os.path.join(build or "", "adapters", "cli", "csgi")
    if not build or not os.path.exists(path):
        pytest.skip("the csgi command is not built (target csgi_cli)")
    out = subprocess.run([path, "--help"], capture_output=True, text=True, timeout=30).stdout
    assert "--wsgi" in out, "csgi was built without --wsgi (Python's embedding library not found by CMake)"
    return path


# Header fields csgi serve gives no env key (ENV-10, ENV-11): each is sent next to a legitimate one.
SMUGGLED = [("X_Remote_User", "admin"), ("Content_Length", "99"), ("Proxy", "http://evil:3128"),
            ("X-Remote-User", "alice")]


def assert_header_rule(dump_body):
    lines = dump_body.decode("latin-1").split("\n")
    assert lines[-1] == "lint=ok", lines
    assert "HTTP_X_REMOTE_USER=alice" in lines, lines
    for key in ("HTTP_PROXY", "HTTP_CONTENT_LENGTH"):
        assert not any(l.startswith(key + "=") for l in lines), lines
    assert not any("admin" in l or "evil" in l or l.endswith("=99") for l in lines), lines


def voluntary_switches(pid):
    """The voluntary context switches of all threads of process `pid` so far (/proc/PID/task/*/status)."""
    total = 0
    for status in glob.glob("/proc/%d/task/*/status" % pid):
        try:
            with open(status) as f:
                for line in f:
                    if line.startswith("voluntary_ctxt_switches:"):
                        total += int(line.split()[1])
        except OSError:  # a thread that ended meanwhile
            pass
    return total
