"""A body is held to the Content-Length that frames it (ADP-13), in both directions: a WSGI app on
`csgi serve --wsgi` whose generator yields more or less than it declared, and a C++ app inside a WSGI host
whose stream, writer or complete body disagrees with its Content-Length."""
import io
import socket
import time
import wsgiref.util

import pytest

from conftest import free_port

TEXT = "h\u00e9llo w\u00f6rld!"  # 12 characters, 14 bytes of UTF-8
FORGED = "HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nforged"

WSGI_APP = '''
TEXT = %r

def application(environ, start_response):
    path = environ["PATH_INFO"]
    if path in ("/generator", "/list"):
        # The classic mistake: len() of the str, not of its encoded bytes.
        start_response("200 OK", [("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", str(len(TEXT)))])
        if path == "/list":
            return [TEXT.encode()]
        return (b for b in [TEXT.encode()])
    if path == "/short":
        # Declares more than csgi pulls a generator ahead for (1 MiB): streamed, and it ends early.
        start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(2 << 20))])
        return (b for b in [b"hello"])
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"second"]
''' % TEXT


def pipelined(port, first):
    """Sends GET first + GET /second on one connection; returns (bytes read, closed by the server)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(b"GET %s HTTP/1.1\r\nHost: t\r\n\r\nGET /second HTTP/1.1\r\nHost: t\r\n\r\n" % first.encode())
    got, closed = b"", False
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            d = s.recv(65536)
        except socket.timeout:
            break
        if not d:
            closed = True
            break
        got += d
    s.close()
    return got, closed


def split(raw):
    head, _, rest = raw.partition(b"\r\n\r\n")
    return head + b"\r\n", rest


@pytest.fixture
def wsgi_server(server_factory, csgi_bin, tmp_path):
    (tmp_path / "framing_app.py").write_text(WSGI_APP)
    port = free_port()
    return server_factory([csgi_bin, "serve", "--wsgi", "framing_app", "--listen", "127.0.0.1:%d" % port], port,
                          cwd=tmp_path)


def test_wsgi_generator_past_its_length_is_cut_and_the_connection_closed(wsgi_server):
    got, closed = pipelined(wsgi_server.port, "/generator")
    head, body = split(got)
    assert b"Content-Length: 12\r\n" in head
    assert body == TEXT.encode()[:12]  # not 14 bytes, and no second response after them
    assert closed
    out = wsgi_server.output()
    assert "ran past its Content-Length: declared 12, produced at least 14" in out and "GET /generator" in out


def test_wsgi_generator_short_of_its_length_ends_the_connection(wsgi_server):
    got, closed = pipelined(wsgi_server.port, "/short")
    head, body = split(got)
    assert b"Content-Length: %d\r\n" % (2 << 20) in head
    assert body == b"hello" and closed  # the second response is not sent into the first one's body
    assert "fell short of its Content-Length: declared 2097152, produced 5" in wsgi_server.output()


def test_wsgi_list_body_goes_out_with_its_real_length(wsgi_server):
    got, closed = pipelined(wsgi_server.port, "/list")
    head, rest = split(got)
    assert b"Content-Length: 14\r\n" in head and b"Content-Length: 12" not in head
    assert rest.startswith(TEXT.encode() + b"HTTP/1.1 200 OK\r\n") and rest.endswith(b"\r\n\r\nsecond")
    assert "Content-Length (12) differs from its body's length (14)" in wsgi_server.output()


# ------------------------------------------------------------------ a C++ app inside a WSGI host


def environ(method="GET"):
    env = {"QUERY_STRING": ""}
    wsgiref.util.setup_testing_defaults(env)
    env.update({"PATH_INFO": "/", "REQUEST_URI": "/framed", "REQUEST_METHOD": method, "wsgi.input": io.BytesIO(),
                "wsgi.errors": io.StringIO()})
    return env


def host(app, env):
    """What a WSGI host does: start_response, then the body, then close(). Returns (headers, chunks, error)."""
    seen = {}

    def start_response(status, headers, exc_info=None):
        seen["headers"] = headers
        return lambda data: None

    result = app(env, start_response)
    chunks, error = [], None
    try:
        for c in result:
            chunks.append(c)
    except RuntimeError as e:
        error = e
    finally:
        if hasattr(result, "close"):
            result.close()
    return seen["headers"], b"".join(chunks), error


def lengths(headers):
    return [v for k, v in headers if k.lower() == "content-length"]


@pytest.mark.parametrize("kind", ["stream", "writer"])
def test_cpp_app_in_a_host_past_its_length_is_cut(load, kind):
    env = environ()
    headers, body, error = host(load("framed", kind, "5", "hel", "lo" + FORGED), env)
    assert lengths(headers) == ["5"] and body == b"hello" and error is None
    assert "ran past its Content-Length: declared 5, produced at least 49" in env["wsgi.errors"].getvalue()


@pytest.mark.parametrize("kind", ["stream", "writer"])
def test_cpp_app_in_a_host_short_of_its_length_raises(load, kind):
    env = environ()
    headers, body, error = host(load("framed", kind, "100", "hel", "lo"), env)
    assert lengths(headers) == ["100"] and body == b"hello"
    assert error is not None  # the host drops the connection instead of taking the response as whole
    assert "fell short of its Content-Length: declared 100, produced 5" in env["wsgi.errors"].getvalue()


def test_cpp_app_in_a_host_complete_body_gets_its_real_length(load):
    env = environ()
    headers, body, error = host(load("framed", "text", "100", "hel", "lo"), env)
    assert lengths(headers) == ["5"] and body == b"hello" and error is None
    assert "Content-Length (100) differs from its body's length (5)" in env["wsgi.errors"].getvalue()


def test_cpp_app_in_a_host_head_keeps_the_declared_length(load):
    env = environ("HEAD")
    headers, _, error = host(load("framed", "stream", "100", "hel", "lo"), env)
    assert lengths(headers) == ["100"] and error is None
    assert env["wsgi.errors"].getvalue() == ""
