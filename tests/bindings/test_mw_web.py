"""csgi.mw.cors and csgi.mw.rate_limit in front of a WSGI app, called in memory (csgi.testing.call); the
rate limit on a real redis-server (started here on a free port, skipped without it) shared by two stacks
as by two processes."""
import os
import sys
import tempfile

import pytest

import csgi
import csgi.testing

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from ports import stop_group  # noqa: E402
from redis_server import REDIS_SERVER, start_redis  # noqa: E402


@pytest.fixture
def redis_url():
    """redis://… of a redis-server of this test's own (skipped without one); stopped when the test ends, or
    earlier by the test through the function yielded beside the URL."""
    if not os.access(REDIS_SERVER, os.X_OK):
        pytest.skip("redis-server not installed")
    with tempfile.TemporaryDirectory() as tmp:
        redis, port = start_redis(tmp)
        try:
            yield "redis://127.0.0.1:%d/0" % port, lambda: stop_group(redis)
        finally:
            if redis.poll() is None:
                stop_group(redis)


def hello(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"hello"]


def test_cors_answers_preflights_of_allowed_origins_and_marks_answers():
    app = csgi.Builder().use(csgi.mw.cors(["https://app.example"], methods=["GET", "PUT"], headers=["X-Token"],
                                          credentials=True)).run(hello).build()
    r = csgi.testing.call(app, "OPTIONS /x", [("Origin", "https://app.example"),
                                              ("Access-Control-Request-Method", "PUT"),
                                              ("Access-Control-Request-Headers", "x-token")])
    assert r.status in (200, 204)
    assert r.header("Access-Control-Allow-Origin") == "https://app.example"
    assert r.header("Access-Control-Allow-Credentials") == "true"
    assert "PUT" in r.header("Access-Control-Allow-Methods")
    r = csgi.testing.call(app, "OPTIONS /x", [("Origin", "https://evil.example"),
                                              ("Access-Control-Request-Method", "PUT")])
    assert r.status == 400 and r.header("Access-Control-Allow-Origin") == ""
    r = csgi.testing.call(app, "GET /x", [("Origin", "https://app.example")])
    assert (r.status, r.body) == (200, b"hello")
    assert r.header("Access-Control-Allow-Origin") == "https://app.example"
    assert "Origin" in r.header("Vary")


def test_bad_options_raise_at_the_call():
    with pytest.raises(ValueError):
        csgi.mw.cors(["https://*.*.example"])
    with pytest.raises(ValueError):
        csgi.mw.rate_limit(limit=0)
    with pytest.raises(ValueError):
        csgi.mw.rate_limit(key_by="moon")


def test_rate_limit_per_address_then_429_with_retry_after():
    app = csgi.Builder().use(csgi.mw.rate_limit(limit=3, window=60)).run(hello).build()
    statuses = [csgi.testing.call(app, "GET /").status for _ in range(4)]
    assert statuses == [200, 200, 200, 429]
    r = csgi.testing.call(app, "GET /")
    assert r.status == 429 and int(r.header("Retry-After")) > 0
    assert r.header("RateLimit-Policy") != ""
    keyed = csgi.Builder().use(csgi.mw.rate_limit(limit=1, key_by="header", header="X-Key")).run(hello).build()
    assert csgi.testing.call(keyed, "GET /", [("X-Key", "a")]).status == 200
    assert csgi.testing.call(keyed, "GET /", [("X-Key", "b")]).status == 200
    assert csgi.testing.call(keyed, "GET /", [("X-Key", "a")]).status == 429


def test_rate_limit_per_session_inside_sessions():
    app = (csgi.Builder().use(csgi.mw.sessions([SECRET])).use(csgi.mw.rate_limit(limit=2, key_by="session"))
           .run(account).build())
    ann = cookie_of(csgi.testing.call(app, "GET /login?name=ann"))
    bob = cookie_of(csgi.testing.call(app, "GET /login?name=bob"))
    assert [csgi.testing.call(app, "GET /me", [("Cookie", ann)]).status for _ in range(3)] == [200, 200, 429]
    assert csgi.testing.call(app, "GET /me", [("Cookie", bob)]).status == 200  # a bucket of its own
    kept.clear()


def test_rate_limit_on_redis_is_shared_and_answers_503_while_redis_is_down(redis_url):
    url, stop_redis = redis_url
    one, two = (csgi.Builder().use(csgi.mw.rate_limit(limit=3, window=60, redis=url)).run(hello).build()
                for _ in range(2))
    statuses = [csgi.testing.call((one, two)[i % 2], "GET /").status for i in range(4)]
    assert statuses == [200, 200, 200, 429]
    stop_redis()
    r = csgi.testing.call(one, "GET /")
    assert r.status == 503 and b"Rate limit unavailable" in r.body


SECRET = "s" * 32
kept = []


def account(environ, start_response):
    """/login?name=N, /me, /token, /logout and POST /say, on environ['csgix.session']."""
    s = environ["csgix.session"]
    kept.append(s)
    path, query = environ["PATH_INFO"], environ.get("QUERY_STRING", "")
    if path == "/login":
        s["user"] = query.partition("=")[2]
        s.rotate()
        body = s.id
    elif path == "/me":
        body = s.get("user", "nobody")
    elif path == "/token":
        body = s.csrf_token()
    elif path == "/logout":
        s.expire()
        body = "bye"
    else:
        body = "said by %s (%d keys: %s)" % (s["user"], len(s), ",".join(sorted(s)))
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [body.encode()]


def cookie_of(r):
    return r.header("Set-Cookie").split(";")[0]


def session_stack(store="cookie"):
    return (csgi.Builder().use(csgi.mw.sessions([SECRET], store=store)).use(csgi.mw.csrf())
            .run(account).build())


def test_a_wsgi_app_keeps_its_session_and_csrf_token_through_the_cpp_middleware():
    app = session_stack()
    r = csgi.testing.call(app, "GET /login?name=ann")
    assert r.status == 200 and len(r.body) == 32  # the new id
    cookie = cookie_of(r)
    assert cookie.startswith("csgi_session=")
    assert "HttpOnly" in r.header("Set-Cookie") and "SameSite=Lax" in r.header("Set-Cookie")
    assert csgi.testing.call(app, "GET /me", [("Cookie", cookie)]).body == b"ann"
    assert csgi.testing.call(app, "GET /me").body == b"nobody"
    r = csgi.testing.call(app, "GET /token", [("Cookie", cookie)])
    token = r.body.decode()
    cookie = cookie_of(r) if r.header("Set-Cookie") else cookie  # the token is kept in the session
    assert len(token) == 64
    say = [("Cookie", cookie), ("Sec-Fetch-Site", "same-origin"), ("Host", "localhost")]
    r = csgi.testing.call(app, "POST /say", say)
    assert r.status == 403 and b"CSRF token missing" in r.body
    r = csgi.testing.call(app, "POST /say", say + [("X-CSRF-Token", token)])
    assert (r.status, r.body) == (200, b"said by ann (2 keys: csrf.token,user)")
    r = csgi.testing.call(app, "GET /logout", [("Cookie", cookie)])
    assert "Max-Age=0" in r.header("Set-Cookie")
    # The view ends with its request's call: a kept one raises instead of reaching a finished request.
    with pytest.raises(RuntimeError, match="after its request"):
        kept[-1]["user"]
    kept.clear()


def test_sessions_on_redis_are_shared_by_two_stacks(redis_url):
    url, stop_redis = redis_url
    one, two = session_stack(url), session_stack(url)
    cookie = cookie_of(csgi.testing.call(one, "GET /login?name=bob"))
    assert csgi.testing.call(two, "GET /me", [("Cookie", cookie)]).body == b"bob"
    stop_redis()
    r = csgi.testing.call(one, "GET /me", [("Cookie", cookie)])
    assert r.status == 503 and b"Session store unavailable" in r.body
    kept.clear()
