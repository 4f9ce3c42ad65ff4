"""Differential test: the same Flask and Django apps served by `csgi serve --wsgi` and by gunicorn (sync)
answer a corpus of requests (GET/HEAD/POST, forms, uploads, unicode paths, redirects, cookies, errors,
streams, files) with the same status, headers and body. The Django apps: django_site (a few middleware, many
views) and django_project (startproject's apps and middleware, CSRF included).

Compared:
- the status code exactly; the reason phrase without regard to case when csgi knows the code (csgi's
  Response carries only the code, the server writes the standard phrase: Werkzeug's "404 NOT FOUND" is
  sent as "404 Not Found", an unregistered code such as 418 with an empty phrase);
- every header, in order, except Date and Server (the servers' own), the connection/framing fields
  Connection, Keep-Alive and Transfer-Encoding (gunicorn's sync worker closes every connection, csgi keeps
  it alive; either may chunk a body of unknown length); Content-Length is compared when both sent one
  (else the body comparison covers it);
- bodies byte for byte.
Both servers run with PYTHONHASHSEED=0 (Werkzeug builds Allow from a set).
"""
import hashlib
import os

import pytest

from conftest import HERE, PYTHON, fetch, free_port, multipart

IGNORED = {"date", "server", "connection", "keep-alive", "transfer-encoding"}


def normalise(headers):
    kept = [(k.lower(), v) for k, v in headers if k.lower() not in IGNORED]
    length = [v for k, v in kept if k == "content-length"]
    return [(k, v) for k, v in kept if k != "content-length"], length


UPLOAD_BIG = bytes((i * 131 + 17) & 0xFF for i in range(250000))
FORM = [("Content-Type", "application/x-www-form-urlencoded")]


def flask_corpus():
    up1, ct1 = multipart([("title", "caf\u00e9")], [("file", "a.bin", b"hello upload")])
    up2, ct2 = multipart([], [("file", "big.bin", UPLOAD_BIG), ("file", "second.txt", b"2nd"),
                              ("other", "\u00fcber.txt", b"x" * 1000)], boundary="b0undary-XYZ")
    return [
        ("GET", "/", [], None),
        ("HEAD", "/", [], None),
        ("GET", "/item/abc", [], None),
        ("GET", "/item/a%20b?x=1&x=2&y=%C3%A9", [], None),
        ("GET", "/item/%E2%82%AC", [], None),
        ("GET", "/caf%C3%A9/na%C3%AFve", [], None),
        ("GET", "/caf%C3%A9/%F0%9F%98%80", [], None),
        ("GET", "/item/", [], None),
        ("GET", "/nope", [], None),
        ("GET", "/nope/%C3%A9", [], None),
        ("POST", "/item/abc", [], b""),
        ("POST", "/form", FORM, b"a=1&b=two&b=three&c=%C3%A9t%C3%A9"),
        ("POST", "/form", FORM, b""),
        ("POST", "/form", [("Content-Type", "text/plain")], b"not a form"),
        ("POST", "/upload", [("Content-Type", ct1)], up1),
        ("POST", "/upload", [("Content-Type", ct2)], up2),
        ("POST", "/raw", [("Content-Type", "application/octet-stream")], UPLOAD_BIG),
        ("PUT", "/raw", [], b"put body"),
        ("POST", "/json", [("Content-Type", "application/json")], b'{"k": [1, 2, "\\u00e9"]}'),
        ("POST", "/json", [("Content-Type", "application/json")], b'{broken'),
        ("GET", "/boom", [], None),
        ("GET", "/teapot", [], None),
        ("GET", "/forbidden", [], None),
        ("GET", "/redirect", [], None),
        ("GET", "/stream", [], None),
        ("GET", "/download", [], None),
        ("HEAD", "/download", [], None),
        ("GET", "/cookie", [], None),
        ("GET", "/cookie", [("Cookie", "visit=again")], None),
        ("GET", "/headers", [("X-One", "1"), ("X-Two", "caf\u00e9".encode().decode("latin-1"))], None),
        ("GET", "/status/204", [], None),
        ("GET", "/status/304", [], None),
        ("GET", "/status/201", [], None),
        ("GET", "/status/503", [], None),
        ("DELETE", "/form", [], None),
        ("GET", "/cpp/hello", [], None),
        ("GET", "/cpp/stream", [], None),
        ("GET", "/cpp/missing", [], None),
    ]


def django_corpus():
    up1, ct1 = multipart([("note", "n\u00f6te")], [("doc", "r\u00e9sum\u00e9.bin", UPLOAD_BIG)])
    up2, ct2 = multipart([("a", "1"), ("a", "2")], [("x", "x.txt", b""), ("y", "y.txt", b"why")])
    return [
        ("GET", "/", [], None),
        ("GET", "/?q=%C3%A9&r=1", [], None),
        ("HEAD", "/", [], None),
        ("GET", "/query?a=1&a=2&b=%C3%A9t%C3%A9", [], None),
        ("GET", "/query", [], None),
        ("POST", "/form", FORM, b"name=Ren%C3%A9&tag=a&tag=b"),
        ("POST", "/form", FORM, b""),
        ("GET", "/form", [], None),
        ("POST", "/upload", [("Content-Type", ct1)], up1),
        ("POST", "/upload", [("Content-Type", ct2)], up2),
        ("POST", "/raw", [("Content-Type", "application/octet-stream")], UPLOAD_BIG),
        ("POST", "/raw", [], b""),
        ("GET", "/caf%C3%A9/na%C3%AFve", [], None),
        ("GET", "/caf%C3%A9/%E2%82%AC", [], None),
        ("GET", "/cafe/x", [], None),
        ("GET", "/missing", [], None),
        ("GET", "/no/such/route", [], None),
        ("GET", "/boom", [], None),
        ("GET", "/slash", [], None),
        ("GET", "/slash/", [], None),
        ("GET", "/stream", [], None),
        ("GET", "/download", [], None),
        ("GET", "/cookie", [], None),
        ("GET", "/cookie", [("Cookie", "visit=before")], None),
        ("GET", "/redirect", [], None),
        ("GET", "/status/201", [], None),
        ("GET", "/status/204", [], None),
        ("GET", "/status/404", [], None),
        ("GET", "/status/410", [], None),
        ("GET", "/status/503", [], None),
        ("OPTIONS", "/query", [], None),
        ("GET", "/query?%FF=%FE", [], None),
    ]


BODY_100K = bytes((i * 7 + 3) & 0xFF for i in range(100 * 1024))


def django_project_corpus():
    return [
        ("GET", "/", [], None),
        ("HEAD", "/", [], None),
        ("GET", "/no/such/view", [], None),
        ("POST", "/upload", [("Content-Type", "application/octet-stream")], BODY_100K),
        ("POST", "/", FORM, b"a=1"),  # not exempt: refused by CsrfViewMiddleware
        ("GET", "/upload", [], None),
        ("GET", "/stream", [], None),
    ]


@pytest.mark.parametrize("spec,corpus", [("flask_diff_site:application", flask_corpus),
                                         ("django_site:application", django_corpus),
                                         ("django_project:application", django_project_corpus)],
                         ids=["flask", "django", "django_project"])
def test_csgi_and_gunicorn_answer_alike(server_factory, csgi_bin, spec, corpus):
    p1, p2 = free_port(), free_port()
    env = {"PYTHONHASHSEED": "0"}
    csgi = server_factory([csgi_bin, "serve", "--wsgi", spec, "--listen", "127.0.0.1:%d" % p1], p1, cwd=HERE,
                          env=env)
    gunicorn = server_factory([PYTHON, "-m", "gunicorn", "--bind", "127.0.0.1:%d" % p2, "--workers", "1",
                               "--worker-class", "sync", "--chdir", HERE, "--log-level", "warning", spec],
                              p2, cwd=HERE, env=env)
    requests = corpus()
    mismatches = []
    for method, path, headers, body in requests:
        a = fetch(p1, method, path, headers, body)
        b = fetch(p2, method, path, headers, body)
        ha, la = normalise(a[2])
        hb, lb = normalise(b[2])
        where = "%s %s" % (method, path)
        if a[0] != b[0] or (a[1] and a[1].lower() != b[1].lower()):
            mismatches.append("%s: status %d %r vs gunicorn %d %r" % (where, a[0], a[1], b[0], b[1]))
        if ha != hb:
            mismatches.append("%s: headers\n  csgi     %r\n  gunicorn %r" % (where, ha, hb))
        if la and lb and la != lb:
            mismatches.append("%s: Content-Length %r vs %r" % (where, la, lb))
        if a[3] != b[3]:
            mismatches.append("%s: body %d bytes %s vs %d bytes %s" % (
                where, len(a[3]), hashlib.sha1(a[3]).hexdigest()[:10], len(b[3]), hashlib.sha1(b[3]).hexdigest()[:10]))
    assert not mismatches, "\n".join(mismatches) + "\n--- csgi log:\n" + csgi.output()[-3000:]


def test_the_corpus_has_at_least_50_requests():
    assert len(flask_corpus()) + len(django_corpus()) >= 50
