"""Python WSGI apps as csgi apps (csgi.App(wsgi_app)), called in memory through csgi.testing.call."""
import pytest

import csgi
from csgi.testing import call


def text_app(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain"), ("X-Repeat", "a"), ("X-Repeat", "b")])
    return [b"path=", environ["PATH_INFO"].encode("latin-1"), b" qs=", environ["QUERY_STRING"].encode()]


def test_complete_list_response():
    r = call(csgi.App(text_app), "GET /caf%C3%A9?x=1")
    assert r.status == 200
    assert r.body == "path=/café qs=x=1".encode("utf-8")
    assert r.headers.count(("X-Repeat", "a")) == 1 and ("X-Repeat", "b") in r.headers
    assert not r.streamed


def test_environ_is_pep3333():
    seen = {}

    def app(environ, start_response):
        seen.update(environ)
        seen["body"] = environ["wsgi.input"].read()
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [b"ok"]

    r = call(csgi.App(app), "POST /p?q=1", [("Content-Type", "text/plain"), ("X-A", "1"), ("X-A", "2")], b"hello")
    assert r.status == 200
    assert seen["wsgi.version"] == (1, 0) and seen["wsgi.url_scheme"] == "http"
    assert seen["REQUEST_METHOD"] == "POST" and seen["CONTENT_LENGTH"] == "5"
    assert seen["CONTENT_TYPE"] == "text/plain" and seen["HTTP_X_A"] == "1, 2"
    assert seen["body"] == b"hello"
    assert seen["wsgi.input_terminated"] is True
    assert seen["wsgi.file_wrapper"] is csgi.FileWrapper
    assert "csgi.input" not in seen and isinstance(seen["wsgi.errors"], csgi.ErrorsStream)


def test_environ_is_a_fresh_dict_per_request_with_each_requests_values():
    # The constant wsgi.* entries and the str objects of keys and values are shared between requests; what
    # the app sees must still be its own request's, and what it changes must not reach the next one.
    seen = []

    def app(environ, start_response):
        seen.append((environ["QUERY_STRING"], environ["wsgi.url_scheme"], environ.get("HTTP_X_SEQ"), "mine" in environ))
        environ["mine"] = 1
        environ["wsgi.url_scheme"] = "changed"
        del environ["wsgi.version"]
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [environ["QUERY_STRING"].encode()]

    a = csgi.App(app)
    for q in ["a=1", "a=1", "b=" + "x" * 200, "b=" + "x" * 200, "", "a=1"]:
        assert call(a, "GET /?" + q if q else "GET /", [("X-Seq", q)] if q else []).body == q.encode()
    assert seen == [(q, "http", q or None, False) for q in ["a=1", "a=1", "b=" + "x" * 200, "b=" + "x" * 200, "", "a=1"]]


def test_environ_entries_that_repeat_then_change_or_go_are_the_requests_own():
    # An entry whose value repeats comes with the dict every environ is copied from; a value that changes
    # afterwards, and a key that a later request lacks, must still be the request's own.
    seen = []

    def app(environ, start_response):
        seen.append((environ.get("HTTP_X_A"), environ.get("HTTP_X_B"), environ["QUERY_STRING"],
                     environ["wsgi.url_scheme"], environ["wsgi.multithread"]))
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [b"ok"]

    a = csgi.App(app)
    steps = [([("X-A", "1"), ("X-B", "b")], "q=1")] * 3 + [
        ([("X-A", "2"), ("X-B", "b")], "q=1"), ([("X-B", "b")], "q=1"), ([("X-B", "b")], "q=2"),
        ([], "q=2"), ([], "q=2"), ([("X-A", "1")], ""), ([("X-A", "1"), ("X-B", "c")], ""),
        ([("X-A", "1"), ("X-B", "c")], "q=1")]
    for headers, q in steps:
        assert call(a, "GET /?" + q, headers).status == 200
    want = [(dict(h).get("X-A"), dict(h).get("X-B"), q) for h, q in steps]
    assert [s[:3] for s in seen] == want
    assert all(s[3] == "http" and s[4] is seen[0][4] for s in seen)


def test_environ_of_a_request_is_the_same_whether_or_not_the_previous_one_was_kept_or_changed():
    # An environ that nothing holds and the app left unchanged may become the next request's, with the
    # entries that differ set: what an app sees must be what a fresh environ would hold. Three apps see the
    # same requests: one drops each environ, one keeps each (never reused), one changes some.
    def snapshot(environ):
        return {k: (type(v).__name__ if k in ("wsgi.input", "wsgi.errors") else v) for k, v in environ.items()}

    seen = {"drop": [], "keep": [], "change": []}
    kept = []

    def make(kind):
        def app(environ, start_response):
            seen[kind].append(snapshot(environ))
            body = environ["wsgi.input"].read()
            if kind == "keep":
                kept.append(environ)
            elif kind == "change" and len(seen[kind]) % 3 == 0:
                environ["HTTP_X_ADDED"] = "1"
                del environ["HTTP_X_ADDED"]
            start_response("200 OK", [("Content-Type", "text/plain")])
            return [body]
        return app

    long = "v" * 300
    steps = [("GET /?q=1", [("X-A", "1")], b"")] * 3 + [
        ("POST /p?q=2", [("X-A", "2"), ("Content-Type", "text/plain")], b"body"),
        ("GET /?q=2", [("X-A", "2"), ("X-B", long)], b""), ("GET /?q=2", [("X-A", "2"), ("X-B", long)], b""),
        ("GET /", [("X-B", long + "w")], b""), ("GET /", [], b""), ("GET /", [], b""),
        ("POST /?q=1", [("X-A", "1"), ("Content-Type", "a/b")], b"x" * 10),
        ("GET /?q=1", [("X-A", "1")], b""), ("GET /?q=3", [("X-A", "3"), ("X-C", "c")], b""),
        ("GET /?q=3", [("X-C", "c")], b""), ("GET /?q=1", [("X-A", "1")], b"")]
    for kind in seen:
        a = csgi.App(make(kind))
        for line, headers, body in steps:
            r = call(a, line, headers, body)
            assert r.status == 200 and r.body == body
    assert seen["drop"] == seen["keep"] == seen["change"]
    assert [s.get("HTTP_X_A") for s in seen["drop"]] == [dict(h).get("X-A") for _, h, _ in steps]
    assert [s.get("HTTP_X_C") for s in seen["drop"]][-3:] == ["c", "c", None]
    assert all("HTTP_X_ADDED" not in s for s in seen["change"])


def test_write_callable_kept_by_the_app_does_not_keep_start_response_alive():
    # start_response returns the same write callable while it is reused; one the app keeps stays usable
    # for its request and is freed with start_response once the app drops it.
    import weakref

    kept = []
    refs = []

    def app(environ, start_response):
        write = start_response("200 OK", [("Content-Type", "text/plain")])
        write(b"w")
        if environ["PATH_INFO"] == "/keep":
            kept.append(write)
            refs.append(weakref.ref(start_response))
        return [b"!"]

    a = csgi.App(app)
    for path in ["/a", "/keep", "/b", "/c"]:
        assert call(a, "GET " + path).body == b"w!"
    assert refs[0]() is not None
    kept.clear()
    assert refs[0]() is None


def test_many_distinct_header_names_all_reach_the_environ():
    # More distinct header names than the key table keeps: the later ones are still in the environ.
    def app(environ, start_response):
        start_response("200 OK", [("Content-Type", "text/plain")])
        names = sorted(k for k in environ if k.startswith("HTTP_X_H"))
        return [",".join(f"{k}={environ[k]}" for k in names).encode()]

    a = csgi.App(app)
    for batch in range(10):
        headers = [(f"X-H{batch}-{i}", f"v{batch}.{i}") for i in range(60)]
        body = call(a, "GET /", headers).body.decode()
        want = {f"HTTP_X_H{batch}_{i}": f"v{batch}.{i}" for i in range(60)}
        assert body == ",".join(f"{k}={want[k]}" for k in sorted(want))


def test_input_readline_and_iteration():
    lines = []

    def app(environ, start_response):
        inp = environ["wsgi.input"]
        lines.append(inp.readline())
        lines.append(inp.readline(3))
        lines.extend(inp)
        start_response("200 OK", [("Content-Type", "text/plain")])
        return []

    call(csgi.App(app), "POST /", [], b"one\ntwo\nthree\nlast")
    assert lines == [b"one\n", b"two", b"\n", b"three\n", b"last"]


def test_generator_calls_start_response_late_and_streams():
    closed = []

    def app(environ, start_response):
        try:
            start_response("200 OK", [("Content-Type", "text/plain")])
            yield b""
            for i in range(3):
                yield b"c%d" % i
        finally:
            closed.append(True)

    r = call(csgi.App(app), "GET /")
    assert r.body == b"c0c1c2" and r.streamed and r.closed and closed == [True]


def test_generator_within_content_length_is_complete():
    def app(environ, start_response):
        start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "4")])
        yield b"ab"
        yield b"cd"

    r = call(csgi.App(app), "GET /")
    assert r.body == b"abcd" and not r.streamed


def test_exception_is_500_with_traceback_and_close_is_called():
    closed = []

    class Result:
        def __iter__(self):
            raise KeyError("missing")

        def close(self):
            closed.append(True)

    def app(environ, start_response):
        start_response("200 OK", [("Content-Type", "text/plain")])
        return Result()

    r = call(csgi.App(app), "GET /")
    assert r.status == 500 and closed == [True]
    assert "Traceback" in r.errors and "KeyError: 'missing'" in r.errors


def test_exception_in_app_call():
    def app(environ, start_response):
        raise RuntimeError("kaput")

    r = call(csgi.App(app), "GET /")
    assert r.status == 500 and "RuntimeError: kaput" in r.errors and b"kaput" not in r.body


def test_exc_info_replaces_unsent_headers():
    def app(environ, start_response):
        start_response("200 OK", [("Content-Type", "text/plain")])
        try:
            raise ValueError("late")
        except ValueError:
            import sys
            start_response("503 Service Unavailable", [("Content-Type", "text/plain")], sys.exc_info())
        return [b"sorry"]

    r = call(csgi.App(app), "GET /")
    assert r.status == 503 and r.body == b"sorry"


def test_start_response_twice_without_exc_info_is_an_error():
    def app(environ, start_response):
        start_response("200 OK", [])
        start_response("200 OK", [])
        return []

    r = call(csgi.App(app), "GET /")
    assert r.status == 500 and "second time" in r.errors


def test_start_response_and_app_calls_check_their_arguments(load):
    """The hand-written call slots of start_response and csgi.App: bad arguments are TypeErrors, C++ errors
    inside become Python exceptions the caller can catch (never a crash)."""
    seen = {}

    def app(environ, start_response):
        for args, kwargs in [((), {}), (("200 OK",), {}), (("200 OK", [], None, 1), {}),
                             (("200 OK", []), {"bogus": 1}), (("200 OK", [], None), {"exc_info": None})]:
            with pytest.raises(TypeError, match="start_response"):
                start_response(*args, **kwargs)
        with pytest.raises(ValueError, match="200 OK"):
            start_response("200OK", [])
        with pytest.raises(TypeError, match="str"):
            start_response(b"200 OK", [])
        start_response("200 OK", [("Content-Type", "text/plain")], exc_info=None)
        seen["ok"] = True
        return [b"fine"]

    r = call(csgi.App(app), "GET /")
    assert r.status == 200 and r.body == b"fine" and seen["ok"]
    hello = load("hello")
    with pytest.raises(TypeError, match="two positional"):
        hello({})
    with pytest.raises(TypeError, match="two positional"):
        hello(environ={}, start_response=None)
    with pytest.raises(TypeError, match="environ must be a dict"):
        hello([], lambda *a: None)


def test_bad_status_and_non_latin1_header():
    def bad_status(environ, start_response):
        start_response("OK", [])
        return []

    def bad_header(environ, start_response):
        start_response("200 OK", [("X-Euro", "\u20ac")])
        return []

    assert call(csgi.App(bad_status), "GET /").status == 500
    r = call(csgi.App(bad_header), "GET /")
    assert r.status == 500 and "latin-1" in r.errors


def test_repeated_status_and_header_objects_give_each_requests_own_headers():
    # The same status str and header tuples request after request (an app's constants), then the same list
    # object with items replaced, added or made bad, and other statuses: each response has what its own
    # start_response call said.
    HEADERS = [("Content-Type", "text/plain"), ("X-A", "1")]
    plan = []

    def app(environ, start_response):
        status, headers = plan.pop(0)
        start_response(status, headers)
        return [b"ok"]

    a = csgi.App(app)
    fields = lambda r: [h for h in r.headers if h[0] in ("Content-Type", "X-A", "X-B")]
    for _ in range(3):
        plan.append(("200 OK", HEADERS))
        r = call(a, "GET /")
        assert r.status == 200 and fields(r) == [("Content-Type", "text/plain"), ("X-A", "1")]
    HEADERS[1] = ("X-A", "2")
    plan.append(("201 Created", HEADERS))
    r = call(a, "GET /")
    assert r.status == 201 and fields(r) == [("Content-Type", "text/plain"), ("X-A", "2")]
    HEADERS.append(("X-B", "3"))
    plan.append(("201 Created", HEADERS))
    assert fields(call(a, "GET /")) == [("Content-Type", "text/plain"), ("X-A", "2"), ("X-B", "3")]
    plan.append(("201 Created", HEADERS[:2]))
    assert fields(call(a, "GET /")) == [("Content-Type", "text/plain"), ("X-A", "2")]
    HEADERS[2] = ("X-B", "bad\r\nvalue")
    plan.append(("200 OK", HEADERS))
    assert call(a, "GET /").status == 500
    plan.append(("200 OK", HEADERS))
    assert call(a, "GET /").status == 500
    plan.append(("OK", []))
    assert call(a, "GET /").status == 500
    plan.append(("404 Not Found", []))
    r = call(a, "GET /")
    assert r.status == 404 and fields(r) == []


def test_legacy_write_callable():
    def app(environ, start_response):
        write = start_response("200 OK", [("Content-Type", "text/plain")])
        write(b"first ")
        return [b"second"]

    assert call(csgi.App(app), "GET /").body == b"first second"


def test_wsgi_errors_reach_csgi_errors():
    def app(environ, start_response):
        print("a note", file=environ["wsgi.errors"])
        environ["wsgi.errors"].write("partial")
        environ["wsgi.errors"].flush()
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [b""]

    r = call(csgi.App(app), "GET /")
    assert "a note\n" in r.errors and "partial" in r.errors


def test_file_wrapper_becomes_a_file_body(tmp_path):
    p = tmp_path / "data.bin"
    p.write_bytes(b"0123456789" * 1000)

    def app(environ, start_response):
        f = open(p, "rb")
        f.read(10)  # position is honoured
        start_response("200 OK", [("Content-Type", "application/octet-stream")])
        return environ["wsgi.file_wrapper"](f, 4096)

    r = call(csgi.App(app), "GET /")
    assert r.file and r.body == (b"0123456789" * 1000)[10:]


def test_file_wrapper_over_a_non_file_iterates_and_closes_and_errors_writelines():
    import io

    class Source(io.BytesIO):
        closed_by = None

        def close(self):
            Source.closed_by = "close()"
            super().close()

    class Failing:
        def read(self, n):
            raise OSError("read failed")

    def app(environ, start_response):
        environ["wsgi.errors"].writelines(["one\n", "two\n"])
        with pytest.raises(ZeroDivisionError):
            environ["wsgi.errors"].writelines(1 / 0 for _ in range(1))
        start_response("200 OK", [("Content-Type", "application/octet-stream")])
        if environ["PATH_INFO"] == "/fail":
            return environ["wsgi.file_wrapper"](Failing(), 4)
        return environ["wsgi.file_wrapper"](Source(b"abcdefghij"), 4)

    r = call(csgi.App(app), "GET /")
    assert r.status == 200 and r.body == b"abcdefghij" and not r.file
    assert Source.closed_by == "close()"
    assert "one\ntwo\n" in r.errors
    r = call(csgi.App(app), "GET /fail")
    assert r.status == 500 and "OSError: read failed" in r.errors


def test_streams_used_after_the_request_raise():
    kept = {}

    def app(environ, start_response):
        kept["input"] = environ["wsgi.input"]
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [b"x"]

    call(csgi.App(app), "GET /")
    with pytest.raises(ValueError, match="finished"):
        kept["input"].read()


def test_request_objects_are_reused_only_when_nothing_holds_them():
    # wsgi.input, wsgi.errors and start_response of a finished request serve the next one when only the
    # bridge holds them; one the app kept stays with its request (finished), never sees another's body.
    seen = []
    kept = {}

    def app(environ, start_response):
        ids = (id(environ["wsgi.input"]), id(environ["wsgi.errors"]), id(start_response))
        body = environ["wsgi.input"].read()
        if environ["PATH_INFO"] == "/keep":
            kept.update(input=environ["wsgi.input"], errors=environ["wsgi.errors"], sr=start_response)
        seen.append((ids, body))
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [body]

    a = csgi.App(app)
    for path, body in [("/a", b"one"), ("/b", b"two"), ("/keep", b"kept"), ("/c", b"three"), ("/d", b"four")]:
        assert call(a, "POST " + path, [("Content-Type", "text/plain")], body).body == body
    assert [b for _, b in seen] == [b"one", b"two", b"kept", b"three", b"four"]
    assert seen[0][0] == seen[1][0] == seen[2][0]  # reused while nobody kept them
    kept_ids = (id(kept["input"]), id(kept["errors"]), id(kept["sr"]))
    assert all(x not in seen[3][0] and x not in seen[4][0] for x in kept_ids)  # kept ones are not reused
    with pytest.raises(ValueError, match="finished"):
        kept["input"].read()
    with pytest.raises(ValueError, match="start_response called a second time"):
        kept["sr"]("200 OK", [])


def test_start_response_kept_from_an_earlier_request_does_not_touch_the_current_one():
    # The state behind start_response is reused only when nothing holds it: a start_response the app kept
    # keeps its own request's (finished) state, whatever the requests after it do.
    kept = []
    errors = []

    def app(environ, start_response):
        if kept:
            try:
                kept[0]("500 Old", [("X-Old", "1")])
            except ValueError as e:
                errors.append(str(e))
        else:
            kept.append(start_response)
        start_response("200 OK", [("Content-Type", "text/plain"), ("X-Path", environ["PATH_INFO"])])
        return [environ["PATH_INFO"].encode()]

    a = csgi.App(app)
    for path in ["/a", "/b", "/c", "/d"]:
        r = call(a, "GET " + path)
        assert r.status == 200 and r.body == path.encode() and ("X-Path", path) in r.headers
        assert ("X-Old", "1") not in r.headers
    assert len(errors) == 3 and all("second time" in e for e in errors)


def test_builder_mounts_python_and_cxx_apps_side_by_side(load):
    layer_seen = []

    def tag(app):  # a Python middleware as a layer of the C++ stack
        def mw(environ, start_response):
            layer_seen.append(environ["SCRIPT_NAME"])

            def sr(status, headers, exc_info=None):
                return start_response(status, headers + [("X-Py-Layer", "1")], exc_info)
            return app(environ, sr)
        return mw

    app = (csgi.Builder().use(tag).mount("/py", text_app).mount("/cpp", load("echo")).build())
    r = call(app, "GET /py/x?a=1")
    assert r.status == 200 and r.body == b"path=/x qs=a=1" and ("X-Py-Layer", "1") in r.headers
    r = call(app, "GET /cpp/y")
    assert r.status == 200 and b"SCRIPT_NAME=/cpp\n" in r.body and b"PATH_INFO=/y\n" in r.body
    assert call(app, "GET /nowhere").status == 404
    assert layer_seen == ["", "", ""]


def test_builder_to_app_wraps_a_python_app():
    app = csgi.Builder().use(csgi.Layer(lambda a: a)).to_app(text_app)
    assert isinstance(app, csgi.App)
    assert call(app, "GET /z").body == b"path=/z qs="


def test_python_app_called_from_many_cxx_threads(load):
    # A C++ stack whose mounted Python app is called concurrently: the GIL is taken per call.
    import threading

    app = csgi.Builder().mount("/py", text_app).build()
    results = []

    def worker():
        for _ in range(50):
            results.append(call(app, "GET /py/t").status)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert results == [200] * 200


def test_python_app_behind_cxx_middleware_and_static_beside_it(tmp_path):
    (tmp_path / "a.txt").write_text("static text")
    app = (csgi.Builder().use(csgi.mw.runtime()).use(csgi.mw.content_length())
           .mount("/files", csgi.static(str(tmp_path), cache=False)).mount("/", text_app).build())
    r = call(app, "GET /files/a.txt")
    assert r.status == 200 and r.body == b"static text" and r.file
    assert r.header("X-Runtime") and r.header("ETag")
    cached = call(csgi.static(str(tmp_path)), "GET /a.txt")  # a small file from memory, not a descriptor
    assert cached.status == 200 and cached.body == b"static text" and not cached.file
    r = call(app, "GET /hi")
    assert r.status == 200 and r.body == b"path=/hi qs=" and r.header("X-Runtime")
    r = call(app, "GET /files/../etc/passwd")  # the path is /etc/passwd (ENV-5): the app at /, not static
    assert r.status == 200 and r.body == b"path=/etc/passwd qs="
    with pytest.raises(Exception, match="above the root"):  # the adapter's 400, before any app
        call(app, "GET /files/../../etc/passwd")
