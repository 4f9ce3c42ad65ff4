"""A Sinatra app under `csgi serve --rack` and under Puma: the same requests get the same answers (status,
body and the fields an app sets; the port in absolute URLs and the session cookie's value aside)."""
import os
import shutil
import sys
import hashlib

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rack_server import comparable_answer, csgi_bin, multipart, only_under_rack_host_test, start  # noqa: E402,F401 (fixtures)

only_under_rack_host_test()

UPLOAD = os.urandom(150000)


def requests():
    form = "name=Ren%C3%A9&tag=a&tag=b&n[x]=1"
    up, up_type = multipart(UPLOAD, "csgi-boundary-7")
    return [
        ("GET", "/", None, {}),
        ("HEAD", "/", None, {}),
        ("GET", "/hello/Ren%C3%A9%20x", None, {}),
        ("GET", "/hello/a%2Fb", None, {}),
        ("GET", "/query?a=1&a=2&b=%C3%A9t%C3%A9&c[]=1&c[]=2", None, {}),
        ("POST", "/form", form, {"Content-Type": "application/x-www-form-urlencoded"}),
        ("POST", "/upload", up, {"Content-Type": up_type}),
        ("POST", "/echo", b"x" * 70000, {"Content-Type": "application/octet-stream"}),
        ("GET", "/redirect", None, {}),
        ("GET", "/cookie", None, {}),
        ("GET", "/cookie", None, {"Cookie": "visit=before"}),
        ("GET", "/stream", None, {}),
        ("GET", "/file", None, {}),
        ("GET", "/file", None, {"Range": "bytes=10-19"}),
        ("GET", "/halt", None, {}),
        ("GET", "/error", None, {}),
        ("GET", "/missing", None, {}),
        ("POST", "/", None, {}),
    ]


COMPARED = ("content-type", "location", "set-cookie", "content-range", "x-content-type-options",
            "x-frame-options", "x-xss-protection")


def answer(server, method, path, body, headers):
    return comparable_answer(server, method, path, body, headers, COMPARED, "rack.session")


def session_round_trip(server):
    _, fields, body = server.request("GET", "/session/set?v=kept%20value")
    cookie = "; ".join(v.split(";")[0] for k, v in fields if k.lower() == "set-cookie")
    _, _, got = server.request("GET", "/session/get", headers={"Cookie": cookie})
    _, _, none = server.request("GET", "/session/get")
    return body, got, none


@pytest.mark.skipif(not shutil.which("puma"), reason="puma is not installed (Debian package puma)")
def test_sinatra_answers_as_under_puma(start, csgi_bin):
    env = {"RACK_ENV": "production"}
    csgi = start([csgi_bin, "serve", "--rack", "sinatra.ru", "--listen", "127.0.0.1:0"], env=env)
    puma = start(["puma", "-b", "tcp://127.0.0.1:0", "-t", "1:1", "-e", "production", "sinatra.ru"], env=env)
    for method, path, body, headers in requests():
        want = answer(puma, method, path, body, headers)
        got = answer(csgi, method, path, body, headers)
        assert got == want, "%s %s\n%s" % (method, path, csgi.output())
    assert session_round_trip(csgi) == session_round_trip(puma) == (
        b"stored kept value", b"session=kept value", b"session=none")
    # what the routes saw, checked once (the comparison above holds it for both)
    status, _, body = answer(csgi, *requests()[6])
    assert status == 200 and body.decode().split(" ")[1:3] == [str(len(UPLOAD)), hashlib.sha256(UPLOAD).hexdigest()]
    assert answer(csgi, "GET", "/hello/Ren%C3%A9%20x", None, {})[2] == "hello Ren\u00e9 x (/hello/Ren%C3%A9%20x)".encode()
    assert "rack: GET /error HTTP/1.1" not in csgi.output()  # Sinatra answers its own 500 in production
