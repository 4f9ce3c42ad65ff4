"""csgi.mw.cors, rate_limit, sessions and csrf in front of an ASGI app (mw_asgi_site.py: Starlette on
scope["csgix.session"]) served on real sockets by `csgi serve --asgi` and `python3 -m csgi serve --asgi`;
sessions on a redis-server of the test's own shared by two workers."""
import itertools
import json
import os
import tempfile

import pytest

import conftest
from conftest import HERE, PYTHON, free_port

pytest.importorskip("starlette")
pytest.importorskip("multipart")  # Starlette's request.form()

from ports import stop_group  # noqa: E402
from redis_server import REDIS_SERVER, start_redis  # noqa: E402

ORIGIN = "https://app.example"
_client_ids = itertools.count()


class Client:
    """Requests with the session cookie the server last set; each with an X-Client of its own (the rate
    limit's key) unless one is given."""

    def __init__(self, port):
        self.port = port
        self.cookie = None

    def request(self, method, path, headers=(), body=None, form=None, json_body=None):
        headers = list(headers)
        if not any(k == "X-Client" for k, _ in headers):
            headers.append(("X-Client", "c%d" % next(_client_ids)))
        if self.cookie:
            headers.append(("Cookie", self.cookie))
        if form is not None:
            body = form.encode()
            headers.append(("Content-Type", "application/x-www-form-urlencoded"))
        if json_body is not None:
            body = json.dumps(json_body).encode()
            headers.append(("Content-Type", "application/json"))
        if method not in ("GET", "HEAD", "OPTIONS"):
            headers.append(("Sec-Fetch-Site", "same-origin"))
        status, _, got, data = conftest.fetch(self.port, method, path, headers, body)
        got = [(k.lower(), v) for k, v in got]
        cookies = [v for k, v in got if k == "set-cookie"]
        if cookies:
            self.cookie = cookies[-1].split(";")[0]
        return status, dict(got), data, cookies

    def json(self, method, path, **kw):
        status, _, data, _ = self.request(method, path, **kw)
        return status, json.loads(data)


def serve(server_factory, program, *extra, store="cookie"):
    """mw_asgi_site:app under `program serve --asgi` (the csgi command, or python3 -m csgi)."""
    port = free_port()
    return server_factory(program + ["serve", "--asgi", "mw_asgi_site:app", "--listen", "127.0.0.1:%d" % port]
                          + list(extra), port, cwd=HERE, env={"MW_ASGI_STORE": store})


def log_in(c, name):
    """GET /csrf for a token, then POST /login with it: the login's JSON and Set-Cookie values."""
    token = c.json("GET", "/csrf")[1]["token"]
    status, _, data, cookies = c.request("POST", "/login", [("X-CSRF-Token", token)], form="name=" + name)
    assert status == 200, data
    return json.loads(data), cookies


@pytest.mark.parametrize("runner", ["csgi", "python3 -m csgi"])
def test_sessions_csrf_cors_and_rate_limit_in_front_of_an_asgi_app(server_factory, csgi_bin, runner):
    srv = serve(server_factory, [csgi_bin] if runner == "csgi" else [PYTHON, "-m", "csgi"])
    c = Client(srv.port)
    assert c.json("GET", "/me") == (401, {"error": "not logged in"}), srv.output()[-3000:]

    # Login: the session made by GET /csrf gets a new id, and the login's head carries its cookie.
    status, _, data, _ = c.request("POST", "/login", form="name=ann")
    assert status == 403 and b"CSRF token missing" in data
    token = c.json("GET", "/csrf")[1]["token"]
    first_cookie = c.cookie
    status, headers, data, cookies = c.request("POST", "/login", [("X-CSRF-Token", token)], form="name=ann")
    login = json.loads(data)
    assert status == 200 and login["name"] == "ann" and login["id"] != login["old"], data
    assert len(cookies) == 1 and "HttpOnly" in cookies[0] and "SameSite=Lax" in cookies[0]
    assert c.cookie != first_cookie and headers["cache-control"] == "private, no-store"
    assert c.json("GET", "/me") == (200, {"name": "ann", "keys": ["csrf.token", "user"]})
    assert c.request("GET", "/starlette-session")[2] == b"ann"

    # CSRF: the token is bound to the session id, so the login's rotation asks for a new one.
    status, _, data, _ = c.request("POST", "/say", json_body={"text": "hi"})
    assert status == 403 and b"CSRF token missing" in data
    status, _, data, _ = c.request("POST", "/say", [("X-CSRF-Token", token)], json_body={"text": "hi"})
    assert status == 403, data
    token = c.json("GET", "/csrf")[1]["token"]
    assert c.json("POST", "/say", headers=[("X-CSRF-Token", token)], json_body={"text": "hi"}) == \
        (202, {"from": "ann", "text": "hi"})
    # The form field, read by csgi.mw.csrf, and the same body read again by the ASGI app.
    assert c.json("POST", "/say", form="text=caf%C3%A9&csrf_token=" + token) == \
        (202, {"from": "ann", "text": "caf\u00e9"})

    # A change made before a streamed body: the cookie goes with the head.
    status, headers, data, cookies = c.request("GET", "/streamed")
    assert (status, data) == (200, b"chunk 0\nchunk 1\nchunk 2\n") and cookies
    # After http.response.start the view refuses; what was changed before is saved.
    status, _, data, cookies = c.request("GET", "/late")
    assert status == 200 and data.startswith(b"csgix.session used after its request's session was saved"), data
    assert cookies
    assert c.json("GET", "/me")[1]["keys"] == ["before", "csrf.token", "streamed", "user"]
    # An app that failed before starting: its view is ended too, never left on a finished request.
    assert c.request("GET", "/fail")[0] == 500
    status, _, data, _ = c.request("GET", "/kept")
    assert status == 200 and data.startswith(b"csgix.session used after its request's session was saved"), data

    # CORS: a preflight answered by the middleware; an answer of the app marked.
    status, headers, _, _ = c.request("OPTIONS", "/say", [("Origin", ORIGIN), ("Access-Control-Request-Method", "POST"),
                                                          ("Access-Control-Request-Headers", "x-csrf-token")])
    assert status in (200, 204)
    assert headers["access-control-allow-origin"] == ORIGIN and headers["access-control-allow-credentials"] == "true"
    assert "POST" in headers["access-control-allow-methods"]
    status, headers, _, _ = c.request("OPTIONS", "/say", [("Origin", "https://evil.example"),
                                                          ("Access-Control-Request-Method", "POST")])
    assert status == 400 and "access-control-allow-origin" not in headers
    status, headers, _, _ = c.request("GET", "/me", [("Origin", ORIGIN)])
    assert status == 200 and headers["access-control-allow-origin"] == ORIGIN and "Origin" in headers["vary"]

    # Rate limit: three per client, then 429 with Retry-After, the app not called.
    statuses = [c.request("GET", "/me", [("X-Client", "burst")]) for _ in range(4)]
    assert [s[0] for s in statuses] == [200, 200, 200, 429]
    assert int(statuses[-1][1]["retry-after"]) > 0 and statuses[-1][1]["ratelimit-policy"]

    # A client without the cookie has no session.
    assert Client(srv.port).json("GET", "/me")[0] == 401
    assert srv.output().count("Traceback") == 1 and "failed on purpose" in srv.output(), srv.output()[-3000:]


@pytest.fixture
def redis_url():
    if not os.access(REDIS_SERVER, os.X_OK):
        pytest.skip("redis-server not installed")
    with tempfile.TemporaryDirectory() as tmp:
        redis, port = start_redis(tmp)
        try:
            yield "redis://127.0.0.1:%d/0" % port
        finally:
            stop_group(redis)


def test_sessions_on_redis_are_saved_by_the_response_and_shared_by_workers(server_factory, csgi_bin, redis_url):
    srv = serve(server_factory, [csgi_bin], "--workers", "2", store=redis_url)
    c = Client(srv.port)
    login, _ = log_in(c, "bob")
    assert c.cookie == "csgi_session=" + login["id"]  # a Redis store's cookie is the id
    old = Client(srv.port)
    old.cookie = "csgi_session=" + login["old"]
    # Each request on a connection of its own, taken by either worker: each finds the session saved.
    for _ in range(6):
        assert c.json("GET", "/me") == (200, {"name": "bob", "keys": ["csrf.token", "user"]}), srv.output()[-3000:]
        assert old.json("GET", "/me")[0] == 401  # the id before the login is forgotten
