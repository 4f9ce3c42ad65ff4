"""`csgi serve --rack`: a Rack app wrapped in Rack::Lint (lint_app.ru) over real sockets: the env, input
reads and rewinds, streaming as produced, to_path as the file, close called once, errors and their log."""
import hashlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rack_server import csgi_bin, only_under_rack_host_test, start  # noqa: E402,F401 (fixtures)

only_under_rack_host_test()

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.fixture
def rack(start, csgi_bin):
    def _rack(*extra):
        return start([csgi_bin, "serve", "--rack", "lint_app.ru", "--listen", "127.0.0.1:0"] + list(extra),
                     env={"RACK_ENV": "production"})
    return _rack


def no_lint_error(server):
    out = server.output()
    assert "LintError" not in out, out


def closed(server):
    return json.loads(server.request("GET", "/closed")[2])


def test_env_and_headers(rack):
    s = rack()
    status, _, body = s.request("GET", "/env?a=1&b=%20", headers={"X-Foo": "bar", "Cookie": "c=1"})
    assert status == 200, s.output()
    env = json.loads(body)
    assert env["REQUEST_METHOD"] == "GET" and env["QUERY_STRING"] == "a=1&b=%20"
    assert env["SCRIPT_NAME"] == "" and env["PATH_INFO"] == "/env"
    assert env["SERVER_NAME"] == "127.0.0.1" and env["SERVER_PORT"] == str(s.port)
    assert env["SERVER_PROTOCOL"] == env["HTTP_VERSION"] == "HTTP/1.1"
    assert env["HTTP_X_FOO"] == "bar" and env["HTTP_COOKIE"] == "c=1" and env["REMOTE_ADDR"] == "127.0.0.1"
    assert env["rack.version"] == [1, 3] and env["rack.url_scheme"] == "http"
    assert env["rack.multithread"] is False and env["rack.multiprocess"] is False
    assert env["rack.run_once"] is False and env["rack.hijack?"] is False
    assert env["input_encoding"] == "ASCII-8BIT"
    assert not any(k.startswith("csgi") for k in env)

    # PATH_INFO as Rack servers give it: still percent-encoded (the app decodes it once)
    status, _, body = s.request("GET", "/caf%C3%A9%2520x/../env")
    assert status == 200 and json.loads(body)["PATH_INFO"] == "/env"
    status, _, body = s.request("GET", "/no%20such%2525")
    assert status == 404 and body == b"no /no%20such%2525"

    status, headers, body = s.request("GET", "/headers")
    assert status == 201 and body == b"made"
    assert [v for k, v in headers if k.lower() == "set-cookie"] == ["a=1", "b=2"]
    no_lint_error(s)


def test_input_reads_and_rewinds(rack):
    s = rack()
    data = b"line one\nline two\n" + os.urandom(200000) + b"\nlast"
    status, _, body = s.request("POST", "/input", body=data, headers={"Content-Type": "application/octet-stream"})
    assert status == 200, s.output()
    parts = body.decode().split("|")
    rest = len(data) - len(b"line one\n") - 3 - 4
    assert parts[:5] == ['"line one\\n"', '"lin"', '"e tw"', '"e tw"', str(rest)]
    assert parts[5:8] == ['""', "nil", "nil"]
    assert parts[8] == str(data.count(b"\n") + 1) and parts[9] == str(len(data))
    assert parts[10] == str(len(data))
    # chunked, and empty
    def chunks():
        yield b"a\nb"
        yield b"c\n"
    status, _, body = s.request("POST", "/input", body=chunks(), headers={"Transfer-Encoding": "chunked"},
                                 encode_chunked=True)
    assert status == 200 and body.decode().split("|")[:2] == ['"a\\n"', '"bc\\n"']
    status, _, body = s.request("POST", "/input", body=b"")
    assert status == 200 and body.decode().split("|")[:3] == ["nil", "nil", "nil"]
    no_lint_error(s)


def test_large_bodies_are_spooled_to_a_file(rack):
    s = rack()
    big = os.urandom(112 * 1024 + 1)  # one byte over the threshold: in an unlinked file while read
    for data, chunked, files in ((big, False, 1), (big, True, 1), (big[:-1], False, 0)):
        status, _, body = s.request("POST", "/spool", body=iter([data]) if chunked else data,
                                    encode_chunked=chunked)
        assert status == 200, s.output()
        assert body.decode().split(" ") == [str(len(data)), hashlib.sha256(data).hexdigest(), "true", str(files)]
        assert s.request("GET", "/spooled-files")[2] == b"0"  # closed when the request ended
    no_lint_error(s)


def read_until(sock, marker, limit=1 << 20):
    got = b""
    while marker not in got and len(got) < limit:
        b = sock.recv(65536)
        if not b:
            break
        got += b
    return got


def test_streaming_is_sent_as_produced(rack, tmp_path):
    s = rack()
    flag = tmp_path / "seen-first"
    with socket.create_connection(("127.0.0.1", s.port), timeout=5) as c:
        c.sendall(b"GET /stream?%s HTTP/1.1\r\nHost: x\r\n\r\n" % str(flag).encode())
        # The body waits for the flag before its second part: the first arrives before it exists.
        got = read_until(c, b"first\n")
        assert b"first\n" in got and b"second" not in got
        flag.write_text("go")
        got += read_until(c, b"0\r\n\r\n")
    assert b"Transfer-Encoding: chunked" in got and b"third\n" in got and got.endswith(b"0\r\n\r\n")
    assert closed(s)["/stream"] == 1
    no_lint_error(s)


def test_client_gone_stops_the_body_and_closes_it(rack):
    s = rack()
    with socket.create_connection(("127.0.0.1", s.port), timeout=5) as c:
        c.sendall(b"GET /endless HTTP/1.1\r\nHost: x\r\n\r\n")
        assert b"part 0" in read_until(c, b"part 0")
    deadline = time.monotonic() + 10
    while closed(s).get("/endless") != 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert closed(s)["/endless"] == 1
    assert s.request("GET", "/env")[0] == 200
    no_lint_error(s)


def test_to_path_is_sent_as_the_file(rack):
    s = rack()
    with open(os.path.join(HERE, "lint_app.ru"), "rb") as f:
        want = f.read()
    status, headers, body = s.request("GET", "/raw/file")
    assert status == 200 and body == want, s.output()
    assert dict(headers).get("Content-Length") == str(len(want))  # a file body: its size is known
    status, _, body = s.request("GET", "/files/lint_app.ru")  # Rack::Files, under Lint
    assert status == 200 and body == want
    assert closed(s)["/raw/file"] == 1
    status, _, _ = s.request("GET", "/raw/missing-file")
    assert status == 500
    assert closed(s)["/raw/file"] == 2
    out = s.output()
    assert "rack: GET /raw/missing-file HTTP/1.1: IOError: csgi: body.to_path:" in out
    assert "each called" not in out
    no_lint_error(s)


def test_a_body_whose_to_ary_gives_an_array_is_sent_whole(rack):
    s = rack()
    status, headers, body = s.request("GET", "/raw/proxied")
    assert status == 200 and body == b"proxied", s.output()
    fields = {k.lower(): v for k, v in headers}
    assert fields.get("content-length") == "7" and "transfer-encoding" not in fields
    assert closed(s)["/raw/proxied"] == 11  # each proxy's close once, the outer one first

    status, headers, body = s.request("GET", "/raw/ary-nil")  # to_ary gives nil: streamed from each
    assert status == 200 and body == b"streamed"
    assert dict((k.lower(), v) for k, v in headers).get("transfer-encoding") == "chunked"
    assert closed(s)["/raw/ary-nil"] == 1


def test_errors(rack):
    s = rack()
    status, _, body = s.request("GET", "/boom?q=1")
    assert status == 500 and b"boom" not in body
    status, _, body = s.request("GET", "/errors")
    assert status == 200 and body == b"ok"
    with socket.create_connection(("127.0.0.1", s.port), timeout=5) as c:
        c.sendall(b"GET /midstream HTTP/1.1\r\nHost: x\r\n\r\n")
        got = read_until(c, b"0\r\n\r\n")
    assert b"one\n" in got and not got.endswith(b"0\r\n\r\n")  # cut: no last chunk
    assert closed(s)["/midstream"] == 1
    status, _, _ = s.request("GET", "/raw/not-a-body")  # refused before the response starts
    assert status == 500
    assert s.request("GET", "/env")[0] == 200  # still serving
    out = s.output()
    assert "rack: GET /boom?q=1 HTTP/1.1: ArgumentError: boom from the app\n\t" in out
    assert "lint_app.ru" in out.split("boom from the app", 1)[1]
    assert "errors-line-one\n" in out and "errors-part-two\n" in out and "errors-unterminated\n" in out
    assert "rack: GET /midstream HTTP/1.1: RuntimeError: failed at part 1" in out
    assert "rack: GET /raw/not-a-body HTTP/1.1: TypeError: Rack body String does not respond to each" in out
    no_lint_error(s)


def test_early_hints(rack):
    s = rack()
    hints = b"Link: </style.css>; rel=preload; as=style\r\nLink: </app.js>; rel=preload\r\n\r\n"
    with socket.create_connection(("127.0.0.1", s.port), timeout=5) as c:
        c.sendall(b"GET /hints HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        got = read_until(c, b"sent=")
        got += read_until(c, b"\0")  # to the end: the server closes
    assert got.startswith(b"HTTP/1.1 103 Early Hints\r\n" + hints + b"HTTP/1.1 200 "), got
    assert b"\r\nsent=true\r\n" in got
    # HTTP/1.0 has no interim responses: the call answers false, the response is as usual
    with socket.create_connection(("127.0.0.1", s.port), timeout=5) as c:
        c.sendall(b"GET /hints HTTP/1.0\r\n\r\n")
        got = read_until(c, b"\0")
    assert got.startswith(b"HTTP/1.1 200 ") and b"sent=false" in got, got
    if shutil.which("curl"):  # HTTP/2 (h2c): the same 103
        out = subprocess.run(["curl", "-s", "-i", "--max-time", "10", "--http2-prior-knowledge",
                              "http://127.0.0.1:%d/hints" % s.port], capture_output=True, timeout=20).stdout
        assert re.match(rb"HTTP/2 103\s*\r\nlink: </style\.css>; rel=preload; as=style\r\n"
                        rb"link: </app\.js>; rel=preload\r\n\r\nHTTP/2 200 ", out, re.I), out
        assert out.endswith(b"sent=true")
    no_lint_error(s)


def test_workers(rack):
    s = rack("--workers", "2")
    for _ in range(20):  # bounded
        status, _, body = s.request("GET", "/env")
        assert status == 200
        env = json.loads(body)
        assert env["rack.multiprocess"] is True
    assert s.stop() == 0, s.output()
    no_lint_error(s)


def test_at_exit_handlers_run_when_the_server_stops(start, csgi_bin, tmp_path):
    marks = tmp_path / "marks"
    marks.mkdir()
    (tmp_path / "config.ru").write_text(
        'File.write(File.join(ENV["MARKS"], "boot-#{Process.pid}"), "")\n'
        'at_exit { File.write(File.join(ENV["MARKS"], Process.pid.to_s), "at_exit") }\n'
        'END { File.write(File.join(ENV["MARKS"], "end-#{Process.pid}"), "END") }\n'
        'run ->(env) { [200, {"Content-Type" => "text/plain"}, [Process.pid.to_s]] }\n')
    for extra, processes in (([], 1), (["--workers", "2"], 2)):
        for f in marks.iterdir():
            f.unlink()
        s = start([csgi_bin, "serve", "--rack", str(tmp_path / "config.ru"), "--listen", "127.0.0.1:0"] + extra,
                  env={"MARKS": str(marks)})
        assert s.request("GET", "/")[0] == 200
        deadline = time.monotonic() + 20  # every process has loaded the app
        while len(list(marks.iterdir())) < processes and time.monotonic() < deadline:
            time.sleep(0.05)
        assert all(f.name.startswith("boot-") for f in marks.iterdir())  # no handler before the stop
        assert s.stop() == 0, s.output()
        pids = sorted(f.name for f in marks.iterdir() if f.name.isdigit())
        assert len(pids) == processes, s.output()  # once in each serving process
        assert sorted(f.name for f in marks.iterdir() if f.name.startswith("end-")) == ["end-" + p for p in pids]
        assert (str(s.proc.pid) in pids) == (not extra)  # the master of --workers serves no Ruby
        assert all((marks / p).read_text() == "at_exit" for p in pids)


def test_config_that_does_not_load(start, csgi_bin, tmp_path):
    bad = tmp_path / "bad.ru"
    bad.write_text("run ->(env) { [200, {}, ['x']]\n")
    for extra in ([], ["--workers", "2"]):
        log = tmp_path / ("bad%d.log" % len(extra))
        import subprocess
        with open(log, "wb") as f:
            rc = subprocess.run([csgi_bin, "serve", "--rack", str(bad), "--listen", "127.0.0.1:0"] + extra,
                                stdout=f, stderr=subprocess.STDOUT, timeout=60).returncode
        out = log.read_text()
        assert rc == (3 if extra else 1), out
        assert "did not load: SyntaxError" in out and "bad.ru:1" in out


def test_reload_on_rb_change(start, csgi_bin, tmp_path):
    (tmp_path / "msg.rb").write_text('MSG = "one"\n')
    (tmp_path / "config.ru").write_text('require_relative "msg"\n'
                                        'run ->(env) { [200, {"Content-Type" => "text/plain"}, [MSG]] }\n')
    s = start([csgi_bin, "serve", "--rack", str(tmp_path / "config.ru"), "--reload", "--listen", "127.0.0.1:0"])
    assert s.request("GET", "/")[2] == b"one"
    (tmp_path / "msg.rb").write_text("MSG = \n")  # does not load: the old worker keeps serving
    deadline = time.monotonic() + 20
    while "reload failed" not in s.output() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "msg.rb:1: syntax error" in s.output() and s.request("GET", "/")[2] == b"one"
    (tmp_path / "msg.rb").write_text('MSG = "two"\n')
    deadline = time.monotonic() + 20
    got = None  # the old worker may still answer while the new one starts: the new answer once seen
    while got != b"two" and time.monotonic() < deadline:
        got = s.request("GET", "/")[2]
        time.sleep(0.05)
    assert got == b"two", s.output()
