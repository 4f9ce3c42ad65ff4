"""C++ apps as WSGI callables, called in process (wsgiref.validate around every one, warnings as errors)."""
import io
import os
import sys
import threading
import warnings
import wsgiref.util
import wsgiref.validate

import pytest

import csgi

APPS = ["hello", "echo", "stream", "delayed", "writer", "shared", "error", "bad", "stack", ("status", "204"),
        ("status", "304"), ("work", "1")]


def environ(path="/", method="GET", body=b"", query="", **extra):
    env = {"QUERY_STRING": query}
    wsgiref.util.setup_testing_defaults(env)
    env.update({"PATH_INFO": path, "REQUEST_METHOD": method, "wsgi.input": io.BytesIO(body),
                "wsgi.errors": io.StringIO()})
    if body:
        env["CONTENT_LENGTH"] = str(len(body))
    env.update(extra)
    return env


def call(app, env, validate=True):
    """Runs a WSGI app as a host would; returns (status, headers, body, errors text)."""
    errors = env["wsgi.errors"]
    seen = {}

    def start_response(status, headers, exc_info=None):
        seen["status"], seen["headers"], seen["exc_info"] = status, headers, exc_info
        return lambda data: None

    wrapped = wsgiref.validate.validator(app) if validate else app
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = wrapped(env, start_response)
        try:
            body = b"".join(result)
        finally:
            if hasattr(result, "close"):
                result.close()
    return seen["status"], seen["headers"], body, errors.getvalue()


@pytest.mark.parametrize("spec", APPS, ids=lambda s: s if isinstance(s, str) else "-".join(s))
def test_validator_accepts_every_app(load, spec):
    args = [spec] if isinstance(spec, str) else list(spec)
    for method in ("GET", "POST", "HEAD"):
        status, headers, body, _ = call(load(*args), environ("/echo", method, b"x=1" if method == "POST" else b""))
        assert status[:3].isdigit()


@pytest.mark.parametrize("script, path, want_script, want_path", [
    ("", "/admin/../x/./y", b"", b"/x/y"),
    ("/app", "/admin/%2e%2e", b"/app", b"/admin/%2e%2e"),  # already decoded: '%' is a byte here
    ("/app/.", "/x/..", b"/app", b"/"),
    ("/app/..", "", b"", b"/"),
    ("/a/b/..", "/x", b"/a", b"/x"),
])
def test_environ_paths_become_canonical(load, script, path, want_script, want_path):
    env = environ(path, SCRIPT_NAME=script)
    status, _, body, _ = call(load("echo"), env)
    lines = dict(l.split(b"=", 1) for l in body.split(b"\n"))
    assert status == "200 OK" and (lines[b"SCRIPT_NAME"], lines[b"PATH_INFO"]) == (want_script, want_path)


def test_environ_path_above_the_root_is_a_400(load):
    status, _, body, _ = call(load("echo"), environ("/a/../../etc/passwd", SCRIPT_NAME="/app"))
    assert status.startswith("400") and b"root" in body


def test_hello(load):
    status, headers, body, errors = call(load("hello"), environ())
    assert status == "200 OK"
    assert ("Content-Length", "13") in headers
    assert body == b"Hello, World!" and errors == ""


def test_environ_reaches_the_env_and_latin1_bytes_survive(load):
    # A raw UTF-8 path arrives in WSGI as latin-1 code points; the C++ app must see the original bytes.
    path = "/caf\u00c3\u00a9"
    env = environ(path, "POST", b"a=1&b=2", query="q=%20x", CONTENT_TYPE="application/x-www-form-urlencoded",
                  HTTP_X_TEST="t\u00e9st", HTTP_CONTENT_TYPE="must-not-pass", SCRIPT_NAME="/app")
    status, headers, body, _ = call(load("echo"), env, validate=False)  # validate.py rejects HTTP_CONTENT_TYPE
    lines = dict(l.split(b"=", 1) for l in body.split(b"\n"))
    assert lines[b"PATH_INFO"] == "/café".encode("utf-8")
    assert lines[b"SCRIPT_NAME"] == b"/app"
    assert lines[b"HTTP_X_TEST"] == "tést".encode("latin-1")
    assert lines[b"QUERY_STRING"] == b"q=%20x"
    assert lines[b"REQUEST_URI"] == b"/app/caf%C3%A9?q=%20x"
    assert lines[b"CONTENT_TYPE"] == b"application/x-www-form-urlencoded"
    assert lines[b"CONTENT_LENGTH"] == b"7"
    assert lines[b"body"] == b"a=1&b=2"


def test_raw_uri_from_gunicorn_is_request_uri(load):
    env = environ("/a b", RAW_URI="/a%20b?x")
    _, _, body, _ = call(load("echo"), env)
    assert b"REQUEST_URI=/a%20b?x\n" in body


def test_environ_value_above_latin1_is_rejected(load):
    env = environ(HTTP_X_TEST="\u20ac")
    with pytest.raises(ValueError, match="latin-1"):
        load("hello")(env, lambda s, h, e=None: None)


def test_input_is_streamed_not_read_whole(load):
    class CountingInput(io.BytesIO):
        asked = 0

        def read(self, n=-1):
            assert n is not None and n >= 0, "csgi must never ask for the whole input at once"
            CountingInput.asked += n
            return super().read(n)

    hello = load("hello")  # never reads the body
    env = environ("/", "POST", b"x" * 100000)
    env["wsgi.input"] = CountingInput(b"x" * 100000)
    call(hello, env, validate=False)
    assert CountingInput.asked == 0
    echo = load("echo")
    env = environ("/", "POST", b"y" * 100000)
    env["wsgi.input"] = CountingInput(b"y" * 100000 + b"TRAILING-NOT-BODY")
    _, _, body, _ = call(echo, env, validate=False)
    assert body.endswith(b"body=" + b"y" * 100000)  # stops at CONTENT_LENGTH


def test_input_error_becomes_500_with_exc_info(load):
    class Broken:
        def read(self, n=-1):
            raise OSError("client went away")

    env = environ("/", "POST", b"abc")
    env["wsgi.input"] = Broken()
    seen = {}

    def start_response(status, headers, exc_info=None):
        seen["status"], seen["exc_info"] = status, exc_info
        return lambda d: None

    result = load("echo")(env, start_response)
    assert seen["status"].startswith("500")
    assert seen["exc_info"][0] is OSError
    assert "client went away" in env["wsgi.errors"].getvalue()
    b"".join(result)


def test_cxx_exception_is_500_logged_to_wsgi_errors(load):
    status, _, body, errors = call(load("error"), environ())
    assert status == "500 Internal Server Error"
    assert "boom from C++" in errors and b"boom" not in body


def test_http_error_keeps_its_status(load):
    status, _, body, _ = call(load("bad"), environ())
    assert status == "400 Bad Request" and b"bad input" in body


def test_no_body_statuses(load):
    for code in ("204", "304"):
        status, headers, body, _ = call(load("status", code), environ())
        assert status.startswith(code) and body == b""
        assert not any(h[0].lower() in ("content-length", "content-type") for h in headers)


def test_stream_body_is_an_iterator_with_close(load):
    env = environ()
    result = load("stream")(env, lambda s, h, e=None: None)
    assert isinstance(result, csgi.BodyIterator)
    assert next(result) == b"chunk0\n"
    result.close()  # early close (client gone) is fine
    assert list(result) == []


def test_writer_from_another_thread_streams(load):
    _, headers, body, _ = call(load("writer"), environ())
    assert body == b"".join(b"part%d\n" % i for i in range(5))


def test_writer_stops_when_host_closes_early(load):
    result = load("writer")(environ(), lambda s, h, e=None: None)
    assert next(result) == b"part0\n"
    result.close()


def test_env_outlives_host_close_until_the_writer_closes(load, tmp_path):
    # APP-4: the host closing the body early does not end the env while the app's writer is open.
    out = tmp_path / "seen"
    result = load("late_env", str(out))(environ(path="/le", method="POST", body=b"payload"), lambda s, h, e=None: None)
    assert next(result) == b"part\n"
    result.close()  # returns once the app has closed its writer
    assert out.read_text() == "/le payload"


def test_file_body_uses_host_file_wrapper(load, tmp_path):
    data = os.urandom(200000)
    p = tmp_path / "f.bin"
    p.write_bytes(data)
    used = []

    class Wrapper:
        def __init__(self, f, blksize=8192):
            used.append(f)
            self.f, self.blksize = f, blksize

        def __iter__(self):
            return iter(lambda: self.f.read(self.blksize), b"")

        def close(self):
            self.f.close()

    env = environ(**{"wsgi.file_wrapper": Wrapper})
    status, headers, body, _ = call(load("file", str(p)), env)
    assert body == data and len(used) == 1 and used[0].closed
    assert ("Content-Length", str(len(data))) in headers
    # A range that stops before the end cannot go through a wrapper that reads to EOF.
    used.clear()
    status, headers, body, _ = call(load("file", str(p), "1000", "5000"), environ(**{"wsgi.file_wrapper": Wrapper}))
    assert body == data[1000:6000] and not used
    # Offset to the end: through the wrapper, positioned at the offset.
    status, headers, body, _ = call(load("file", str(p), "7"), environ(**{"wsgi.file_wrapper": Wrapper}))
    assert body == data[7:] and len(used) == 1


def test_file_body_without_wrapper(load, tmp_path):
    p = tmp_path / "g.txt"
    p.write_bytes(b"0123456789")
    _, _, body, _ = call(load("file", str(p), "2", "3"), environ())
    assert body == b"234"


def test_python_middleware_wraps_a_cxx_app(load):
    def shout(app):
        def mw(environ, start_response):
            def sr(status, headers, exc_info=None):
                return start_response(status, headers + [("X-Shout", "1")], exc_info)
            return [b"".join(app(environ, sr)).upper()]
        return mw

    status, headers, body, _ = call(shout(load("hello")), environ())
    assert body == b"HELLO, WORLD!" and ("X-Shout", "1") in headers


def test_gil_is_released_while_cxx_runs(load):
    app = load("work", "100")
    done = []

    def worker():
        call(app, environ(), validate=False)
        done.append(1)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    import time
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert len(done) == 4
    # Serialised by the GIL these would take >= 400 ms; allow generous slack on a loaded machine.
    assert time.monotonic() - t0 < 0.39


def test_app_object_round_trip_validates():
    def pyapp(environ, start_response):
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [environ["PATH_INFO"].encode("latin-1")]

    status, headers, body, _ = call(csgi.App(pyapp), environ("/r\u00e9"))
    assert status == "200 OK" and body == "/ré".encode("latin-1")
