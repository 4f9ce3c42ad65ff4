"""The conformance suite's app (tests/conformance/conformance_app.cpp) mirrored as a Python WSGI app, for
`csgi serve --wsgi conformance_wsgi:application` run through tests/conformance/run_conformance.py.

One behaviour per case, chosen by the X-Csgi-Test request header, answering exactly what the C++ app
answers. Cases a WSGI app cannot express are left out here and skipped (with the reason) by the test
that runs the suite (test_serve_wsgi.py): csgix.cleanup, csgix.informational, csgix.io and a delayed
responder dropped unanswered. Delayed responses and writers become what WSGI has instead: a result
computed on another thread, and a generator fed by another thread.

CSGI_CONFORMANCE_DIR: where the files and the marker files live (default: a fresh directory).
"""
import os
import queue
import tempfile
import threading
import time

import csgi

SMALL = 4096
BIG = 1300000


def pattern(n):
    return bytes(((i * 7 + 3) & 0xFF) for i in range(n))


def fnv1a(data, h=1469598103934665603):
    for c in data:
        h ^= c
        h = (h * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h


DIR = os.environ.get("CSGI_CONFORMANCE_DIR") or tempfile.mkdtemp(prefix="csgi-conformance-py-")
os.makedirs(DIR, exist_ok=True)


def write_file(path, data):
    tmp = "%s.tmp%d" % (path, os.getpid())
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


SMALL_PATH = os.path.join(DIR, "small.bin")
BIG_PATH = os.path.join(DIR, "big.bin")
write_file(SMALL_PATH, pattern(SMALL))
write_file(BIG_PATH, pattern(BIG))


def marker(kind, token):
    return os.path.join(DIR, "%s-%s" % (kind, "".join(c for c in token if c.isalnum())))


def text(start_response, body, status="200 OK"):
    if isinstance(body, str):
        body = body.encode("latin-1")
    start_response(status, [("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", str(len(body)))])
    return [body]


def value_of(environ, key):
    v = environ.get(key)
    if v is None:
        return "<missing>"
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


class ChunkStream:
    """An iterable of chunks whose close() leaves a marker file (the C++ app's ChunkStream)."""

    def __init__(self, chunks, marker_path):
        self.chunks, self.marker_path = chunks, marker_path

    def __iter__(self):
        return iter(self.chunks)

    def close(self):
        if self.marker_path:
            write_file(self.marker_path, b"closed")


def read_all(environ):
    return environ["wsgi.input"].read()


def writer(lines):
    """A generator fed by another thread: the WSGI form of a delayed response's Writer."""
    q = queue.Queue()

    def produce():
        for s in lines:
            q.put(s)
        q.put(None)

    threading.Thread(target=produce, daemon=True).start()
    while True:
        item = q.get()
        if item is None:
            return
        yield item


RANGED_ETAG = '"csgi-conformance-small"'
RANGED_LAST_MODIFIED = "Mon, 02 Jan 2006 15:04:05 GMT"


def ranged_file(environ, start_response):
    """The small file with fixed validators: what csgi.mw.ranges() narrows (Range is the app's, ADP-16)."""
    start_response("200 OK", [("Content-Type", "application/octet-stream"), ("ETag", RANGED_ETAG),
                              ("Last-Modified", RANGED_LAST_MODIFIED), ("Content-Length", str(SMALL))])
    return environ["wsgi.file_wrapper"](open(SMALL_PATH, "rb"), 65536)


RANGED = csgi.mw.ranges()(ranged_file)


def application(environ, start_response):
    test = environ.get("HTTP_X_CSGI_TEST", "")
    if test == "file_ranged":
        return RANGED(environ, start_response)
    path = environ.get("PATH_INFO", "")
    if not test and (path == "/canary" or path.endswith("/canary")):
        return text(start_response, "canary")
    if not test and path.startswith("/seq/"):
        return text(start_response, path[5:])

    if test == "script_name":
        return text(start_response, environ["SCRIPT_NAME"])
    if test == "query_string":
        return text(start_response, environ.get("QUERY_STRING", ""))
    if test == "post_urlencoded":
        body = read_all(environ)
        return text(start_response, "%s|%s|" % (value_of(environ, "CONTENT_LENGTH"),
                                                value_of(environ, "CONTENT_TYPE")) + body.decode("latin-1"))
    if test == "big_post":
        h, total, inp = 1469598103934665603, 0, environ["wsgi.input"]
        while True:
            chunk = inp.read(4096)
            if not chunk:
                break
            total += len(chunk)
            h = fnv1a(chunk, h)
        return text(start_response, "%d %016x" % (total, h))
    if test == "url_scheme":
        return text(start_response, environ["wsgi.url_scheme"])
    if test in ("stream_body", "chunked_response"):
        start_response("200 OK", [("Content-Type", "text/plain; charset=utf-8")])
        if test == "stream_body":
            return ChunkStream([b"foo", b"bar", b"baz"], marker("stream-closed", environ.get("HTTP_X_TOKEN", "")))
        return ChunkStream([b"chunk1 ", b"chunk2 ", b"chunk3"], "")
    if test in ("file_fd", "file_big", "file_path"):
        f = open(BIG_PATH if test == "file_big" else SMALL_PATH, "rb")
        start_response("200 OK", [("Content-Type", "application/octet-stream"),
                                  ("Content-Length", str(BIG if test == "file_big" else SMALL))])
        return environ["wsgi.file_wrapper"](f, 65536)
    if test == "header_foo":
        return text(start_response, value_of(environ, "HTTP_FOO"))
    if test == "cookie":
        return text(start_response, value_of(environ, "HTTP_COOKIE"))
    if test == "env":
        return text(start_response, "|".join(value_of(environ, k) for k in (
            "REQUEST_METHOD", "SCRIPT_NAME", "PATH_INFO", "QUERY_STRING", "SERVER_NAME", "SERVER_PORT")))
    if test == "path_info":
        return text(start_response, path)
    if test == "mount":  # conformance_app.cpp's admin_map: /admin and / mounted
        if path == "/admin" or path.startswith("/admin/"):
            return text(start_response, "admin " + path[len("/admin"):])
        return text(start_response, "site " + path)
    if test == "server_protocol":
        return text(start_response, environ["SERVER_PROTOCOL"])
    if test == "script_name_defined":
        return text(start_response, "defined" if "SCRIPT_NAME" in environ else "missing")
    if test == "stream_closed":
        return text(start_response, "closed" if os.path.exists(marker("stream-closed", environ.get("HTTP_X_TOKEN", "")))
                    else "not closed")
    if test == "errors":
        present = "wsgi.errors" in environ
        environ["wsgi.errors"].write("conformance: a line for csgi.errors\n")
        environ["wsgi.errors"].flush()
        return text(start_response, "present" if present else "missing")
    if test == "status_line":
        return text(start_response, "ok")
    if test == "die":
        raise RuntimeError("conformance: the app died on purpose")
    if test == "http_error":  # WSGI has no HttpError: the app answers the status itself
        return text(start_response, "conformance: teapot", "418 I'm a teapot")
    if test == "repeated_header":
        return text(start_response, value_of(environ, "HTTP_FOO"))
    if test == "repeated_response_header":
        start_response("200 OK", [("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", "3"),
                                  ("X-Foo", "bar"), ("X-Foo", "baz")])
        return [b"two"]
    if test == "no_cookie_key":
        return text(start_response, "bogus" if "COOKIE" in environ else "ok")
    if test == "not_modified":
        start_response("304 Not Modified", [])
        return []
    if test == "request_uri":
        return text(start_response, environ["REQUEST_URI"])
    if test == "long_header":
        return text(start_response, value_of(environ, "HTTP_X_LONG"))
    if test == "delayed":
        return text(start_response, "delayed")
    if test == "delayed_thread":  # the answer comes from another thread
        result = []
        t = threading.Thread(target=lambda: (time.sleep(0.02), result.append("from another thread")))
        t.start()
        t.join()
        return text(start_response, result[0])
    if test == "writer":
        start_response("200 OK", [("Content-Type", "text/plain")])
        return writer([b"one ", b"two ", b"three"])
    if test in ("echo", "input_seek"):
        return text(start_response, read_all(environ))
    if test == "not_found":
        return text(start_response, "Not Found", "404 Not Found")
    if test == "authorization":
        return text(start_response, value_of(environ, "HTTP_AUTHORIZATION"))
    if test == "noread":
        return text(start_response, "did not read the body")
    if test == "head":
        return text(start_response, "a body HEAD must not carry")
    if test == "delayed_throws":  # the WSGI form: the result raises before its first chunk
        def failing():
            raise RuntimeError("conformance: delayed callable threw")
            yield b""  # pragma: no cover
        start_response("200 OK", [("Content-Type", "text/plain")])
        return failing()
    if test == "stream_throws_first":
        def failing_first():
            raise RuntimeError("conformance: next() threw")
            yield b""  # pragma: no cover
        start_response("200 OK", [("Content-Type", "text/plain")])
        return failing_first()
    if test == "writer_gone":  # the client leaves: the server closes the generator (GeneratorExit)
        m = marker("writer-false", environ.get("HTTP_X_TOKEN", ""))

        def endless():
            try:
                for _ in range(3000):  # at most ~15 s
                    yield b"w" * 16384
                    time.sleep(0.005)
            except GeneratorExit:
                write_file(m, b"false")
                raise

        start_response("200 OK", [("Content-Type", "text/plain")])
        return endless()
    if test == "writer_gone_check":
        return text(start_response, "false seen" if os.path.exists(marker("writer-false", environ.get("HTTP_X_TOKEN", "")))
                    else "not seen")
    if test == "writer_dropped":  # the WSGI form: the generator fails after a first chunk
        def partial():
            yield b"partial"
            raise RuntimeError("conformance: the body failed half-way")
        start_response("200 OK", [("Content-Type", "text/plain")])
        return partial()
    if test in ("length_stream_over", "length_writer_over", "length_stream_short", "length_writer_short"):
        # ADP-13: a body that breaks its declared length (the short one above the 1 MiB csgi pulls ahead).
        over = test.endswith("_over")
        start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "5" if over else str(2 << 20))])
        chunks = [b"hel", b"lo"] + ([b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nforged"] if over else [])
        return (c for c in chunks)
    if test in ("trailers_stream", "trailers_writer", "trailers_big"):
        # WSGI has no trailer fields: the same bodies without them (ADP-17: dropped).
        start_response("200 OK", [("Content-Type", "text/plain")])
        if test == "trailers_big":
            return (b"x" * 4096 for _ in range(64))
        return (c for c in [b"one ", b"two ", b"three"])
    if test == "lint_off":
        return text(start_response, "lint")
    if test == "body_limit_key":
        return text(start_response, value_of(environ, "csgix.body_limit"))
    return text(start_response, "unknown conformance test '%s'" % test, "404 Not Found")
