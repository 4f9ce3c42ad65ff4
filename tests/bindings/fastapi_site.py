"""A FastAPI app for the ASGI tests: served by `csgi serve --asgi fastapi_site:app` and by uvicorn.

JSON, path and query parameters, forms and file uploads, a streaming response, a background task, 404
and 422, a C++ app (csgi.asgi) mounted under /cpp, and the hostile routes: /endless streams until the
client leaves (/endless-count: how many chunks it made), /endless-raw/ sends until send() raises (then
writes how it ended to $ASGI_TEST_DIR/endless.txt), /raise-after-start/ raises after
http.response.start. The lifespan appends "startup PID" / "shutdown PID" to $ASGI_TEST_DIR/lifespan.txt;
with ASGI_FAIL_STARTUP set the startup raises.
"""
import asyncio
import os
import threading
from typing import List, Optional

from fastapi import BackgroundTasks, FastAPI, File, Form, Request, UploadFile
from fastapi.responses import JSONResponse, PlainTextResponse, RedirectResponse, StreamingResponse
from pydantic import BaseModel

import csgi

DIR = os.environ.get("ASGI_TEST_DIR", ".")
app = FastAPI()


def note(name, text):
    with open(os.path.join(DIR, name), "a") as f:
        f.write(text + "\n")


@app.on_event("startup")
async def startup():
    if os.environ.get("ASGI_FAIL_STARTUP"):
        raise RuntimeError("startup refused by the test")
    note("lifespan.txt", "startup %d" % os.getpid())


@app.on_event("shutdown")
async def shutdown():
    note("lifespan.txt", "shutdown %d" % os.getpid())


class Item(BaseModel):
    name: str
    price: float
    tags: List[str] = []


@app.get("/")
async def root():
    return {"hello": "world"}


@app.get("/items/{item_id}")
async def read_item(item_id: int, q: Optional[str] = None, n: int = 1):
    return {"item_id": item_id, "q": q, "n": n}


@app.post("/items")
async def create_item(item: Item):
    return {"created": item.dict(), "total": item.price * 2}


@app.get("/path/{rest:path}")
def sync_path(rest: str, request: Request):
    return {"rest": rest, "root_path": request.scope.get("root_path", ""), "query": str(request.query_params)}


@app.get("/thread")
def sync_thread():
    """A plain `def` endpoint (FastAPI runs it on anyio's worker threads): the thread that ran it."""
    return {"thread": threading.get_native_id()}


@app.post("/form")
async def form(a: str = Form(...), b: Optional[str] = Form(None)):
    return {"a": a, "b": b}


@app.post("/upload")
async def upload(title: str = Form(...), file: UploadFile = File(...)):
    data = await file.read()
    return {"title": title, "filename": file.filename, "size": len(data), "sum": sum(data) % 65536}


@app.post("/raw")
async def raw(request: Request):
    body = await request.body()
    return PlainTextResponse("%d %d" % (len(body), sum(body) % 65536))


@app.get("/stream")
async def stream(n: int = 5):
    async def gen():
        for i in range(n):
            yield b"line %d\n" % i
            await asyncio.sleep(0)
    return StreamingResponse(gen(), media_type="text/plain")


@app.post("/background")
async def background(tasks: BackgroundTasks, tag: str = "x"):
    tasks.add_task(note, "background.txt", "done " + tag)
    return {"queued": tag}


@app.get("/background-result")
async def background_result():
    path = os.path.join(DIR, "background.txt")
    return PlainTextResponse(open(path).read() if os.path.exists(path) else "")


@app.get("/headers")
async def headers(request: Request):
    return {k: request.headers.get(k) for k in ("x-test", "user-agent-x", "cookie", "content-type")}


@app.get("/cookie")
async def cookie():
    r = JSONResponse({"ok": True})
    r.set_cookie("a", "1")
    r.set_cookie("b", "two", httponly=True)
    return r


@app.get("/redirect")
async def redirect():
    return RedirectResponse("/items/1?q=r", status_code=302)


@app.get("/status/{code}")
async def status(code: int):
    return PlainTextResponse("status %d" % code, status_code=code)


@app.get("/error")
async def error():
    raise RuntimeError("boom from FastAPI")


PRODUCED = {"endless": 0}


@app.get("/endless")
async def endless():
    async def gen():
        while PRODUCED["endless"] < 100000:
            PRODUCED["endless"] += 1
            yield b"e" * 1024
    return StreamingResponse(gen(), media_type="application/octet-stream")


@app.get("/endless-count")
async def endless_count():
    return PRODUCED


async def endless_raw(scope, receive, send):
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
    sent = 0
    try:
        while sent < 100000:
            await send({"type": "http.response.body", "body": b"r" * 1024, "more_body": True})
            sent += 1
        await send({"type": "http.response.body", "body": b""})
        note("endless.txt", "finished")
    except OSError as e:
        note("endless.txt", "send raised %s after %d" % (type(e).__name__, sent))


async def raise_after_start(scope, receive, send):
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": b"partial", "more_body": True})
    raise RuntimeError("raised after http.response.start")


app.mount("/raise-after-start", raise_after_start)
app.mount("/endless-raw", endless_raw)
if os.environ.get("CSGI_TEST_APPS"):
    app.mount("/cpp", csgi.asgi(csgi.load_app(os.environ["CSGI_TEST_APPS"], ["stack"])))
