"""Fixtures for the Rack host tests (imported by each test module): servers started on 127.0.0.1 port 0,
their port read from their log. Not a conftest.py: tests/bindings/*.py import their own conftest by name."""
import http.client
import os
import re
import signal
import subprocess
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))



def only_under_rack_host_test():
    """Run by their own ctest entry (rack_host), not again by python_bindings' run over tests/bindings."""
    if not os.environ.get("CSGI_RACK_TESTS"):
        pytest.skip("run by ctest -R rack_host", allow_module_level=True)

LISTENING = re.compile(rb"listening on (?:http://|tcp://)?127\.0\.0\.1:(\d+)", re.I)


class Server:
    """A server process whose log names the port it listens on; stopped with SIGTERM (then SIGKILL)."""

    def __init__(self, argv, log_path, cwd=HERE, env=None):
        self.log_path = log_path
        self.log = open(log_path, "wb")
        self.proc = subprocess.Popen(argv, cwd=cwd, env=dict(os.environ, **(env or {})), stdout=self.log,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        self.port = None
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and self.port is None:
            m = LISTENING.search(self.output().encode())
            if m:
                self.port = int(m.group(1))
            elif self.proc.poll() is not None:
                raise RuntimeError("server exited early:\n" + self.output())
            else:
                time.sleep(0.05)
        if self.port is None:
            self.stop()
            raise RuntimeError("server did not listen:\n" + self.output())

    def output(self):
        if not self.log.closed:
            self.log.flush()
        with open(self.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def request(self, method, path, body=None, headers=None, encode_chunked=False):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=20)
        try:
            conn.request(method, path, body=body, headers=headers or {}, encode_chunked=encode_chunked)
            r = conn.getresponse()
            return r.status, r.getheaders(), r.read()
        finally:
            conn.close()

    def stop(self):
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
            except ProcessLookupError:
                pass
        self.log.close()
        return self.proc.returncode


@pytest.fixture(scope="session")
def csgi_bin():
    build = os.environ.get("CSGI_BUILD_DIR", "")
    path = os.path.join(build, "adapters", "cli", "csgi")
    if not build or not os.path.exists(path):
        pytest.skip("the csgi command is not built (target csgi_cli)")
    return path


@pytest.fixture
def start(tmp_path):
    started = []

    def _start(argv, env=None):
        s = Server(argv, str(tmp_path / ("server%d.log" % len(started))), env=env)
        started.append(s)
        return s

    yield _start
    for s in started:
        s.stop()


def comparable_answer(server, method, path, body, headers, compared, session_cookie):
    """(status, the fields named in `compared` sorted, body) of one request, the server's port written PORT and
    the value of the cookie `session_cookie` VALUE: what two servers of one app must answer alike."""
    status, fields, data = server.request(method, path, body=body, headers=headers)
    kept = []
    for k, v in fields:
        if k.lower() in compared:
            v = v.replace(":%d/" % server.port, ":PORT/")
            v = re.sub(r"^%s=[^;]*" % re.escape(session_cookie), session_cookie + "=VALUE", v)
            kept.append((k.lower(), v))
    return status, sorted(kept), data.replace(b":%d/" % server.port, b":PORT/")


def multipart(upload, boundary):
    """A form with a text field `note` and a file field `doc` holding `upload` (a non-ASCII file name):
    (body, Content-Type)."""
    body = (("--%s\r\nContent-Disposition: form-data; name=\"note\"\r\n\r\nhi there\r\n" % boundary).encode()
            + ("--%s\r\nContent-Disposition: form-data; name=\"doc\"; filename=\"r\u00e9sum\u00e9.bin\"\r\n"
               "Content-Type: application/octet-stream\r\n\r\n" % boundary).encode() + upload
            + ("\r\n--%s--\r\n" % boundary).encode())
    return body, "multipart/form-data; boundary=" + boundary
