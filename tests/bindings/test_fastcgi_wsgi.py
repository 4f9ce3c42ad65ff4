"""A Python WSGI app under the FastCGI runner: `csgi-fcgi --wsgi module:app`, spoken to over FastCGI by a
minimal client written here (FastCGI 1.0: BEGIN_REQUEST, PARAMS, STDIN; STDOUT records until END_REQUEST)."""
import os
import socket
import struct

import pytest

from conftest import free_port
from test_serve_wsgi import ERRORS_APP

BEGIN_REQUEST, END_REQUEST, PARAMS, STDIN, STDOUT, STDERR = 1, 3, 4, 5, 6, 7


def record(kind, request_id, content):
    pad = (8 - len(content) % 8) % 8
    return struct.pack("!BBHHBx", 1, kind, request_id, len(content), pad) + content + b"\0" * pad


def name_value(name, value):
    def length(n):
        return struct.pack("!B", n) if n < 128 else struct.pack("!I", n | 0x80000000)
    return length(len(name)) + length(len(value)) + name + value


def fcgi_request(port, params, body=b""):
    """One request on its own connection; returns (stdout bytes, stderr bytes)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=20)
    try:
        out = record(BEGIN_REQUEST, 1, struct.pack("!HB5x", 1, 0))
        pairs = b"".join(name_value(k.encode("latin-1"), v.encode("latin-1")) for k, v in params.items())
        out += record(PARAMS, 1, pairs) + record(PARAMS, 1, b"")
        for i in range(0, len(body), 32768):
            out += record(STDIN, 1, body[i:i + 32768])
        out += record(STDIN, 1, b"")
        s.sendall(out)
        buf, stdout, stderr = b"", b"", b""
        while True:
            while len(buf) < 8:
                d = s.recv(65536)
                if not d:
                    raise AssertionError("connection closed before END_REQUEST")
                buf += d
            _, kind, _, clen, pad = struct.unpack("!BBHHBx", buf[:8])
            while len(buf) < 8 + clen + pad:
                d = s.recv(65536)
                if not d:
                    raise AssertionError("short record")
                buf += d
            content, buf = buf[8:8 + clen], buf[8 + clen + pad:]
            if kind == STDOUT:
                stdout += content
            elif kind == STDERR:
                stderr += content
            elif kind == END_REQUEST:
                return stdout, stderr
    finally:
        s.close()


def params_for(method, path, query="", length=0):
    p = {"REQUEST_METHOD": method, "SCRIPT_NAME": "", "PATH_INFO": path, "QUERY_STRING": query,
         "REQUEST_URI": path + ("?" + query if query else ""), "SERVER_NAME": "localhost", "SERVER_PORT": "80",
         "SERVER_PROTOCOL": "HTTP/1.1", "REMOTE_ADDR": "127.0.0.1", "GATEWAY_INTERFACE": "CGI/1.1"}
    if length:
        p["CONTENT_LENGTH"] = str(length)
        p["CONTENT_TYPE"] = "application/octet-stream"
    return p


@pytest.fixture
def fcgi_bin():
    build = os.environ.get("CSGI_BUILD_DIR", "")
    path = os.path.join(build, "adapters", "fastcgi", "csgi-fcgi")
    if not build or not os.path.exists(path):
        pytest.skip("csgi-fcgi is not built (libfcgi-dev missing or CSGI_FASTCGI off)")
    return path


def test_wsgi_app_under_csgi_fcgi(fcgi_bin, server_factory, tmp_path):
    (tmp_path / "errapp.py").write_text(ERRORS_APP + '''
def echo(environ, start_response):
    data = environ["wsgi.input"].read()
    start_response("201 Created", [("Content-Type", "text/plain"), ("X-Len", str(len(data)))])
    return [environ["PATH_INFO"].encode("latin-1"), b" ", data[:10]]
''')
    port = free_port()
    server = server_factory([fcgi_bin, "--wsgi", "errapp:application", "--listen", "127.0.0.1:%d" % port,
                             "--threads", "2"], port, cwd=tmp_path)
    out, _ = fcgi_request(port, params_for("GET", "/"))
    head, _, body = out.partition(b"\r\n\r\n")
    assert body == b"one two" and b"Content-Type: text/plain" in head, out
    out, _ = fcgi_request(port, params_for("GET", "/raise"))
    assert out.startswith(b"Status: 500"), out
    assert fcgi_request(port, params_for("GET", "/closed"))[0].endswith(b"\r\n\r\n1")
    assert "KeyError: 'raised by the WSGI app'" in server.output()
    server.stop()
    assert server.proc.returncode == 0

    port = free_port()
    server = server_factory([fcgi_bin, "--wsgi", "errapp:echo", "--listen", "127.0.0.1:%d" % port,
                             "--workers", "2", "--threads", "1"], port, cwd=tmp_path)
    data = os.urandom(100000)
    out, _ = fcgi_request(port, params_for("POST", "/caf\xc3\xa9", length=len(data)), data)
    head, _, body = out.partition(b"\r\n\r\n")
    assert head.startswith(b"Status: 201") and b"X-Len: 100000" in head, out[:200]
    assert body == "/caf\xc3\xa9".encode("latin-1") + b" " + data[:10]
    server.stop()
    assert server.proc.returncode == 0
