"""A Starlette app behind csgi.mw.cors, rate_limit, sessions and csrf (test_mw_asgi.py), for
`csgi serve --asgi mw_asgi_site:app`: its routes read and write scope["csgix.session"]. The store is
MW_ASGI_STORE ("cookie" unless set: "memory" or a redis:// URL)."""
import os

from starlette.applications import Starlette
from starlette.responses import JSONResponse, PlainTextResponse, StreamingResponse
from starlette.routing import Route

import csgi


def session(request):
    return request.scope["csgix.session"]


async def login(request):
    """Form name=…: the user kept in the session, whose id changes (the old one forgotten)."""
    form = await request.form()
    s = session(request)
    old = s.id
    s["user"] = form["name"]
    s.rotate()
    return JSONResponse({"name": s["user"], "old": old, "id": s.id})


async def me(request):
    s = session(request)
    if "user" not in s:
        return JSONResponse({"error": "not logged in"}, status_code=401)
    return JSONResponse({"name": s["user"], "keys": sorted(s)})


def csrf(request):
    """A def endpoint: run on one of anyio's worker threads."""
    return JSONResponse({"token": session(request).csrf_token()})


async def say(request):
    if request.headers.get("content-type", "").startswith("application/x-www-form-urlencoded"):
        text = (await request.form())["text"]
    else:
        text = (await request.json())["text"]
    return JSONResponse({"from": session(request)["user"], "text": text}, status_code=202)


async def streamed(request):
    """Changes the session, then streams its body: the cookie goes with the head."""
    session(request)["streamed"] = "yes"

    async def chunks():
        for i in range(3):
            yield b"chunk %d\n" % i

    return StreamingResponse(chunks(), media_type="text/plain")


async def starlette_session(request):
    """Starlette's request.session, which reads scope["session"] (set by `site` below)."""
    return PlainTextResponse(request.session.get("user", "nobody"))


inner = Starlette(routes=[
    Route("/login", login, methods=["POST"]),
    Route("/me", me),
    Route("/csrf", csrf),
    Route("/say", say, methods=["POST"]),
    Route("/streamed", streamed),
    Route("/starlette-session", starlette_session),
])


async def late(scope, receive, send):
    """Changes the session before and after http.response.start: the second change raises."""
    s = scope["csgix.session"]
    s["before"] = "1"
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
    try:
        s["after"] = "1"
        said = b"changed after the start"
    except RuntimeError as e:
        said = str(e).encode()
    await send({"type": "http.response.body", "body": said})


kept = []


async def fail(scope, receive, send):
    """Keeps the view, then raises before the response starts (a 500)."""
    kept.append(scope["csgix.session"])
    raise ValueError("failed on purpose")


async def use_kept(scope, receive, send):
    """Uses the view kept by /fail, whose request is over."""
    try:
        said = kept.pop()["user"].encode()
    except RuntimeError as e:
        said = str(e).encode()
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": said})


RAW = {"/late": late, "/fail": fail, "/kept": use_kept}


async def site(scope, receive, send):
    if scope["type"] == "http":
        scope["session"] = scope["csgix.session"]
        if scope["path"] in RAW:
            await RAW[scope["path"]](scope, receive, send)
            return
    await inner(scope, receive, send)


app = (csgi.Builder()
       .use(csgi.mw.cors(["https://app.example"], methods=["GET", "POST"], headers=["X-CSRF-Token", "Content-Type"],
                         credentials=True))
       .use(csgi.mw.rate_limit(limit=3, window=60, key_by="header", header="X-Client"))
       .use(csgi.mw.sessions(["s" * 32], store=os.environ.get("MW_ASGI_STORE", "cookie")))
       .use(csgi.mw.csrf())
       .to_app(site))
