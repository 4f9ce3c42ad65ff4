"""Raw ASGI streamed responses for test_serve_asgi_stream.py. /burst sends 16 chunks of 64 bytes and the
end in one pass of the loop (as a StreamingResponse over an async generator that never waits does);
/bursts sends them 4 times, waiting for the next pass of the loop before each burst and before the end;
/paced waits for the next pass before each chunk and sends the end with the last one. /sha answers the
length and SHA-256 of the request body, which it reads whole."""
import asyncio
import hashlib

CHUNKS = [b"%04d %s\n" % (i, b"x" * 58) for i in range(16)]
BURSTS = 4


def more(message):
    return {"type": "http.response.body", "body": message, "more_body": True}


async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    if scope["path"] == "/sha":
        body, rest = b"", True
        while rest:
            message = await receive()
            body += message.get("body", b"")
            rest = message.get("more_body", False)
        await send({"type": "http.response.start", "status": 200, "headers": []})
        digest = hashlib.sha256(body).hexdigest().encode()
        await send({"type": "http.response.body", "body": b"%d %s" % (len(body), digest)})
        return
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
    path = scope["path"]
    if path == "/paced":
        for chunk in CHUNKS[:-1]:
            await asyncio.sleep(0)
            await send(more(chunk))
        await asyncio.sleep(0)
        await send({"type": "http.response.body", "body": CHUNKS[-1]})
        return
    for _ in range(BURSTS if path == "/bursts" else 1):
        if path == "/bursts":
            await asyncio.sleep(0)
        for chunk in CHUNKS:
            await send(more(chunk))
    if path == "/bursts":
        await asyncio.sleep(0)
    await send({"type": "http.response.body", "body": b""})
