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
from csgi._csgi import _env_conversions as conversions

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


def test_environ_value_above_latin1_is_rejected_once_read(load):
    # The env reads the environ when the app uses an entry: a value above U+00FF makes the call raise
    # ValueError (the host answers 500) once the app has read it (echo reads HTTP_X_TEST), iterated the env
    # (dump) or answered with a delayed response (the env is read whole before it may go to other threads).
    for app in ("echo", "dump", "delayed"):
        with pytest.raises(ValueError, match=r"environ\['HTTP_X_TEST'\] holds characters above U\+00FF"):
            load(app)(environ(HTTP_X_TEST="\u20ac"), lambda s, h, e=None: None)
    status, _, body, _ = call(load("hello"), environ(HTTP_X_TEST="\u20ac"))  # never read: no error
    assert status == "200 OK" and body == b"Hello, World!"


def test_environ_path_above_latin1_is_rejected_before_the_app(load):
    for key in ("PATH_INFO", "SCRIPT_NAME"):
        with pytest.raises(ValueError, match=r"environ\['%s'\] holds characters above U\+00FF" % key):
            load("hello")(environ(**{key: "/\u20ac"}), lambda s, h, e=None: None)


def expected_env(env):
    """What a C++ app iterating the env of `env` sees, as dump's "key=value" lines (PATH_INFO canonical)."""
    out = {}
    for k, v in env.items():
        if not isinstance(v, str) or (k.startswith("wsgi.") and len(k) > 5) or k in ("HTTP_CONTENT_TYPE",
                                                                                      "HTTP_CONTENT_LENGTH"):
            continue
        if k in ("CONTENT_TYPE", "CONTENT_LENGTH") and v == "":
            continue
        out[k] = v
    for k in ("QUERY_STRING", "SCRIPT_NAME", "PATH_INFO"):
        out.setdefault(k, "")
    if "REQUEST_URI" not in out:
        out["REQUEST_URI"] = env.get("RAW_URI") or ((out["SCRIPT_NAME"] + out["PATH_INFO"]) or "/") + (
            "?" + out["QUERY_STRING"] if out["QUERY_STRING"] else "")
    flag = lambda k: "<true>" if env.get(k) else "<false>"
    out.update({"csgi.version": "1.0", "csgi.url_scheme": "https" if env.get("wsgi.url_scheme") == "https" else "http",
                "csgi.multithread": flag("wsgi.multithread"), "csgi.multiprocess": flag("wsgi.multiprocess"),
                "csgi.run_once": flag("wsgi.run_once"), "csgi.nonblocking": "<false>", "csgi.streaming": "<true>",
                "csgi.input": "<object>", "csgi.errors": "<object>"})
    return sorted("%s=%s" % kv for kv in out.items())


def test_env_iterated_holds_every_environ_entry(load):
    app = load("dump")  # one app object: its exchange (and env) is reused between the calls
    first = environ("/a", query="x=1", HTTP_X_ONLY_FIRST="1", HTTP_COOKIE="c=\u00e9", RAW_URI="/a?x=1",
                    HTTP_CONTENT_TYPE="dropped", CONTENT_TYPE="", **{"gunicorn.socket": object(), "wsgi.multithread": True,
                                                                     "wsgi.url_scheme": "https", "x.custom": "v"})
    second = environ("/b", "POST", b"xy", CONTENT_TYPE="text/plain")
    for env in (first, second, first):
        status, _, body, _ = call(app, env, validate=False)  # validate.py refuses HTTP_CONTENT_TYPE
        lines = body.decode("latin-1").split("\n")
        assert status == "200 OK" and lines[-1] == "lint=ok", lines
        assert lines[:-1] == expected_env(env)


def test_env_reads_erases_sets_and_emplaces_like_an_eager_env(load):
    env = environ(HTTP_X_A="a", HTTP_X_B="b", HTTP_X_GONE="g", HTTP_X_SET="old", HTTP_X_KEEP="host")
    status, _, body, _ = call(load("envops"), env)
    got = dict(l.split("=", 1) for l in body.decode("latin-1").splitlines())
    size = len(expected_env(env)) - 2 + 1  # less HTTP_X_GONE and csgi.version, plus X_NEW
    assert status == "200 OK" and got == {
        "a": "a", "none": "0", "erased": "1", "gone": "0", "erased_again": "0", "set": "new", "keep": "host kept",
        "new": "mine inserted", "version_erased": "1", "version": "0", "input": "1", "errors": "1",
        "multithread": "0", "streaming": "1", "size": str(size), "dup": "0", "iter HTTP_X_A": "HTTP_X_A=a",
        "iter HTTP_X_B": "HTTP_X_B=b", "iter HTTP_X_GONE": "-", "iter HTTP_X_SET": "HTTP_X_SET=new",
        "iter HTTP_X_KEEP": "HTTP_X_KEEP=host", "iter X_NEW": "X_NEW=mine", "iter csgi.version": "-", "b": "b"}


def test_an_environ_entry_is_converted_when_read_and_never_when_not(load):
    # A gunicorn-sized environ: 20 headers beside the CGI keys.
    headers = {"HTTP_X_H%02d" % i: "value %d" % i for i in range(20)}
    hello, late = load("hello"), load("late_key", "HTTP_X_H07")
    before = conversions()
    status, _, body, _ = call(hello, environ(**headers), validate=False)
    assert (status, body) == ("200 OK", b"Hello, World!")
    assert conversions() == before  # the hello reads no entry: none is made

    env = environ(**headers)
    seen = {}
    result = late(env, lambda s, h, e=None: seen.setdefault("status", s))
    assert seen["status"] == "200 OK" and conversions() == before  # not read yet
    env["HTTP_X_H07"] = "changed after the call"  # the env reads the environ as it is when the app reads
    try:
        chunks = list(result)
    finally:
        result.close()
    assert chunks == [b"changed after the call"]
    assert conversions() == before + 1  # that one entry, and no other


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
