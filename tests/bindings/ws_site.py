"""A Starlette app with WebSocket routes for the ASGI websocket-scope tests: served by
`csgi serve --asgi ws_site:app` and by uvicorn, and the transcripts compared.

/echo echoes text ("echo:" + text) and bytes (reversed), choosing the subprotocol "chat" when offered;
/scope sends the scope's portable fields as JSON; /refuse closes before accepting, /no-answer returns
without answering, /raise-first raises before accepting, /raise-after raises after accepting;
/server-close sends "bye" and closes with 4001 "custom"; /headers accepts with an extra header;
/record keeps the client's close code and reason, which GET /last answers; /no-read accepts and never
reads.
"""
import asyncio
import json

from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket

last = {"close": "none"}


async def echo(ws: WebSocket):
    await ws.accept(subprotocol="chat" if "chat" in ws.scope["subprotocols"] else None)
    while True:
        m = await ws.receive()
        if m["type"] == "websocket.disconnect":
            return
        if m.get("text") is not None:
            await ws.send_text("echo:" + m["text"])
        else:
            await ws.send_bytes(m["bytes"][::-1])


def text(v):
    return v.decode() if isinstance(v, bytes) else (v or "")


async def scope(ws: WebSocket):
    await ws.accept()
    s = ws.scope
    await ws.send_text(json.dumps({
        "type": s["type"], "path": s["path"], "query_string": s["query_string"].decode(),
        "raw_path": text(s.get("raw_path")).split("?")[0], "root_path": s["root_path"], "scheme": s["scheme"],
        "subprotocols": s["subprotocols"],
        "x-custom": [v.decode() for k, v in s["headers"] if k == b"x-custom"],
    }, sort_keys=True))
    await ws.close()


async def refuse(ws: WebSocket):
    await ws.close(code=4003)


async def no_answer(ws: WebSocket):
    return


async def raise_first(ws: WebSocket):
    raise RuntimeError("refused by raising")


async def raise_after(ws: WebSocket):
    await ws.accept()
    await ws.send_text("about to fail")
    raise RuntimeError("failed after accepting")


async def server_close(ws: WebSocket):
    await ws.accept()
    await ws.send_text("bye")
    await ws.close(code=4001, reason="custom")


async def headers(ws: WebSocket):
    await ws.accept(headers=[(b"x-extra", b"yes")])
    await ws.send_text("with headers")
    await ws.close()


async def record(ws: WebSocket):
    await ws.accept()
    while True:
        m = await ws.receive()
        if m["type"] == "websocket.disconnect":
            last["close"] = "%s %s" % (m.get("code"), m.get("reason") or "")
            return


async def no_read(ws: WebSocket):
    await ws.accept()
    await asyncio.sleep(60)


async def last_close(request):
    return PlainTextResponse(last["close"])


app = Starlette(routes=[
    WebSocketRoute("/echo", echo), WebSocketRoute("/scope", scope), WebSocketRoute("/refuse", refuse),
    WebSocketRoute("/no-answer", no_answer), WebSocketRoute("/raise-first", raise_first),
    WebSocketRoute("/raise-after", raise_after), WebSocketRoute("/server-close", server_close),
    WebSocketRoute("/headers", headers), WebSocketRoute("/record", record), WebSocketRoute("/no-read", no_read),
    Route("/last", last_close),
])
