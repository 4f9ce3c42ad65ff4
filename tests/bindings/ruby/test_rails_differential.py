"""A Rails 6.1 app (rails.ru: railties and actionpack, one file) under `csgi serve --rack` and under Puma:
the same requests get the same answers (status, body and the fields an app sets; the port in absolute
URLs and the session cookie's value aside). Each server boots Rails once."""
import hashlib
import os
import shutil
import socket
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rack_server import comparable_answer, csgi_bin, multipart, only_under_rack_host_test, start  # noqa: E402,F401 (fixtures)

only_under_rack_host_test()

UPLOAD = os.urandom(150000)


def rails_installed():
    return subprocess.run(["ruby", "-e", 'require "rails"; require "action_controller/railtie"'],
                          capture_output=True, timeout=60).returncode == 0


pytestmark = [
    pytest.mark.skipif(not shutil.which("puma"), reason="puma is not installed (Debian package puma)"),
    pytest.mark.skipif(not rails_installed(), reason="Rails is not installed (Debian package ruby-railties)"),
]


def requests():
    up, up_type = multipart(UPLOAD, "csgi-boundary-9")
    return [
        ("GET", "/", None, {}),
        ("HEAD", "/", None, {}),
        ("GET", "/json?q=%C3%A9", None, {"Accept": "application/json"}),
        ("GET", "/hello/Ren%C3%A9%20x?x=1&t[]=a&t[]=b&y=2", None, {}),
        ("GET", "/redirect", None, {}),
        ("POST", "/upload", up, {"Content-Type": up_type}),
        ("POST", "/submit", "name=x", {"Content-Type": "application/x-www-form-urlencoded"}),  # no token
        ("GET", "/cookie", None, {}),
        ("GET", "/cookie", None, {"Cookie": "visit=before"}),
        ("GET", "/live", None, {}),
        ("GET", "/missing", None, {}),
        ("DELETE", "/json", None, {}),
    ]


COMPARED = ("content-type", "location", "set-cookie", "cache-control", "vary", "x-frame-options",
            "x-content-type-options", "referrer-policy")


def answer(server, method, path, body, headers):
    return comparable_answer(server, method, path, body, headers, COMPARED, "_csgi_diff_session")


def cookie_of(fields):
    return "; ".join(v.split(";")[0] for k, v in fields if k.lower() == "set-cookie")


def csrf_and_session(server):
    """The session cookie round trip and a form POST with the CSRF token of that session."""
    _, fields, body = server.request("GET", "/session/set?v=kept%20value")
    cookie = cookie_of(fields)
    _, _, got = server.request("GET", "/session/get", headers={"Cookie": cookie})
    _, fields, token = server.request("GET", "/form", headers={"Cookie": cookie})
    cookie = cookie_of(fields) or cookie
    form = "authenticity_token=%s&name=Ren%%C3%%A9" % token.decode().replace("+", "%2B").replace("/", "%2F") \
        .replace("=", "%3D")
    posted = server.request("POST", "/submit", body=form, headers={
        "Cookie": cookie, "Content-Type": "application/x-www-form-urlencoded"})
    return body, got, posted[0], posted[2]


def early_hints(server):
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as c:
        c.sendall(b"GET /hints HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        got = b""
        for _ in range(1000):  # bounded: the server closes after the response
            b = c.recv(65536)
            if not b:
                break
            got += b
    return got.split(b"\r\n\r\n", 1)[0]


def test_rails_answers_as_under_puma(start, csgi_bin):
    env = {"RAILS_ENV": "production", "RACK_ENV": "production"}
    csgi = start([csgi_bin, "serve", "--rack", "rails.ru", "--listen", "127.0.0.1:0"], env=env)
    puma = start(["puma", "-b", "tcp://127.0.0.1:0", "-t", "1:1", "-e", "production", "--early-hints",
                  "rails.ru"], env=env)
    for method, path, body, headers in requests():
        want = answer(puma, method, path, body, headers)
        got = answer(csgi, method, path, body, headers)
        assert got == want, "%s %s\n%s" % (method, path, csgi.output())
    assert csrf_and_session(csgi) == csrf_and_session(puma) == (
        b"stored kept value", b"session=kept value", 200, "submitted Ren\u00e9".encode())
    assert early_hints(csgi) == early_hints(puma) == \
        b"HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload; as=style"
    # what the routes saw, checked once (the comparison above holds it for both)
    status, _, body = answer(csgi, *requests()[5])
    assert status == 200 and body.decode().split(" ")[1:3] == [str(len(UPLOAD)), hashlib.sha256(UPLOAD).hexdigest()]
    assert answer(csgi, *requests()[6])[0] == 422  # a form POST without the CSRF token
    assert answer(csgi, "GET", "/live", None, {})[2] == b"".join(b"live %d\n" % i for i in range(5))
    # Rails' body shapes under csgi: a page (an Array inside Rack::BodyProxy's) goes whole with its length,
    # an ActionController::Live body (inside the same proxies, but its to_ary gives nil) as a stream
    _, fields, body = csgi.request("GET", "/")
    fields = {k.lower(): v for k, v in fields}
    assert fields.get("content-length") == str(len(body)) and "transfer-encoding" not in fields
    _, fields, _ = csgi.request("GET", "/live")
    assert {k.lower(): v for k, v in fields}.get("transfer-encoding") == "chunked"


def switches(pid):
    """{tid: (voluntary, involuntary)} context switches of each thread of process `pid`."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{tid}/status") as f:
            fields = dict(line.split(":", 1) for line in f if ":" in line)
        out[int(tid)] = (int(fields["voluntary_ctxt_switches"]), int(fields["nonvoluntary_ctxt_switches"]))
    return out


def test_the_answer_to_a_rails_page_does_not_preempt_the_vm_thread(start, csgi_bin):
    # The server on one CPU, as bench/suites/ruby.sh runs it: the io thread (the main thread), woken by the
    # VM thread's answer, must not preempt the VM thread, which would then switch twice per page
    # (preempted, then asleep) instead of once.
    cpu = min(os.sched_getaffinity(0))
    csgi = start(["taskset", "-c", str(cpu), csgi_bin, "serve", "--rack", "rails.ru", "--listen", "127.0.0.1:0",
                  "--threads", "1"], env={"RAILS_ENV": "production", "RACK_ENV": "production"})
    pages = 200
    with socket.create_connection(("127.0.0.1", csgi.port), timeout=20) as c:
        f = c.makefile("rb")

        def page():
            c.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            assert f.readline().startswith(b"HTTP/1.1 200")
            length = 0
            while (line := f.readline()) not in (b"\r\n", b""):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            assert len(f.read(length)) == length > 0

        for _ in range(20):
            page()
        before = switches(csgi.proc.pid)
        for _ in range(pages):
            page()
        after = switches(csgi.proc.pid)
    off_io = sum(after[t][1] - before[t][1] for t in before if t in after and t != csgi.proc.pid)
    # Preempted by the io thread, the VM thread switches about once more per page (1.0-1.4 measured); other
    # processes on the CPU (a loaded test machine) add some preemptions of their own, hence the margin.
    assert off_io / pages < 0.75, f"{off_io} involuntary switches off the io thread in {pages} pages"
