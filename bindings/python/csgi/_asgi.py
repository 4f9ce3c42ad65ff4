"""csgi apps as ASGI 3 applications: ``csgi.asgi(app)``.

The scope becomes a PEP 3333 environ that the WSGI bridge of ``csgi.App`` turns into the env, so both
bridges follow the same rules (SCRIPT_NAME from ``root_path``, headers, client/server, scheme, dot
segments). The C++ app runs on a thread pool: ``csgi.App`` releases the GIL while C++ code runs, and the
event loop only awaits. The request body reaches ``csgi.input`` through a buffer that the event loop
fills from ``receive()`` while the app reads (at most ``_HIGH_WATER`` bytes ahead); a body that
``http.disconnect`` cuts short is an input error for the app. Responses go out through ``send()``:
complete bodies in one message, files, streams and delayed writers chunk by chunk as ``more_body``
messages, each awaited (the server's back-pressure reaches the C++ stream, which is pulled only when
the previous chunk was taken).
"""
import asyncio
import collections
import concurrent.futures
import sys
import threading

from ._csgi import App

_HIGH_WATER = 1 << 16      # request body bytes buffered ahead of the app's reads
_LATE_BODY_LIMIT = 4 << 20  # request body bytes kept for an app still streaming its response
_END = object()


class ClientDisconnected(OSError):
    """Raised by wsgi.input.read() when the client went away before its request body ended."""


class _CompleteInput:
    """wsgi.input over a body that arrived whole in the first ``http.request`` message."""

    __slots__ = ("_data", "_pos")

    def __init__(self, data):
        self._data = data
        self._pos = 0

    def read(self, n=-1):
        if n is None or n < 0:
            n = len(self._data) - self._pos
        out = self._data[self._pos:self._pos + n]
        self._pos += len(out)
        return out


class _StreamedInput:
    """wsgi.input over ``receive()``: read() runs on a pool thread and waits (without the GIL) for the
    chunks that pump(), a task on the event loop, receives while the buffer is below the high-water mark.
    """

    def __init__(self, loop, receive, first):
        self._loop = loop
        self._receive = receive
        self._cv = threading.Condition()
        self._chunks = collections.deque([first] if first else [])
        self._buffered = len(first)
        self._more = True
        self._disconnected = False
        self._limit = _HIGH_WATER
        self._dropped = False
        self._room = asyncio.Event()
        self.gone = asyncio.Event()  # set on http.disconnect

    def read(self, n=-1):
        with self._cv:
            while not self._chunks and self._more:
                self._cv.wait()
            if not self._chunks:
                if self._disconnected:
                    raise ClientDisconnected("the client disconnected before the request body ended")
                if self._dropped:
                    raise RuntimeError("the request body was dropped: read late, after %d bytes" % _LATE_BODY_LIMIT)
                return b""
            out = self._take(n)
            if self._buffered < self._limit:
                self._loop.call_soon_threadsafe(self._room.set)
            return out

    def _take(self, n):
        if n is None or n < 0:
            out = b"".join(self._chunks)
            self._chunks.clear()
        else:
            first = self._chunks[0]
            if len(first) <= n:
                out = self._chunks.popleft()
            else:
                out = first[:n]
                self._chunks[0] = first[n:]
        self._buffered -= len(out)
        return out

    def response_started(self):
        """The app answered: receive on (to see a disconnect) with a larger buffer for a late reader."""
        with self._cv:
            self._limit = _LATE_BODY_LIMIT
        self._room.set()

    async def pump(self):
        while True:
            with self._cv:
                full = self._more and self._buffered >= self._limit
                if full:
                    self._room.clear()
            if full:
                await self._room.wait()
                continue
            message = await self._receive()
            kind = message.get("type")
            with self._cv:
                if kind == "http.request":
                    body = message.get("body", b"")
                    if body and self._buffered < _LATE_BODY_LIMIT:
                        self._chunks.append(bytes(body))
                        self._buffered += len(body)
                    elif body:
                        self._dropped = True
                    if not message.get("more_body", False):
                        self._more = False
                elif kind == "http.disconnect":
                    self._more = False
                    self._disconnected = True
                self._cv.notify_all()
            if kind == "http.disconnect":
                self.gone.set()
                return


def _latin1(text):
    return text.encode("utf-8").decode("latin-1")


_HEADER_KEYS = {b"content-type": "CONTENT_TYPE", b"content-length": "CONTENT_LENGTH"}  # name → environ key


def _header_key(name):
    key = _HEADER_KEYS.get(name) or _HEADER_KEYS.get(name.lower())
    if key is None:
        key = "HTTP_" + name.decode("latin-1").upper().replace("-", "_")
        if len(_HEADER_KEYS) < 1024:
            _HEADER_KEYS[name] = key
    return key


def _environ(scope, body_input):
    """The PEP 3333 environ of an ASGI http scope (what uvicorn's and Starlette's WSGI adapters build)."""
    query = scope.get("query_string")
    query = query.decode("latin-1") if query else ""
    root = scope.get("root_path", "")
    path = scope["path"]
    env = {
        "REQUEST_METHOD": scope["method"],
        "SCRIPT_NAME": _latin1(root) if root and not root.isascii() else root,
        "PATH_INFO": path if path.isascii() else _latin1(path),
        "QUERY_STRING": query,
        "SERVER_PROTOCOL": "HTTP/" + scope.get("http_version", "1.1"),
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": scope.get("scheme", "http"),
        "wsgi.input": body_input,
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": False,
        "wsgi.run_once": False,
        "wsgi.input_terminated": True,
    }
    raw = scope.get("raw_path")
    if raw:
        uri = raw.decode("latin-1")
        env["REQUEST_URI"] = uri + "?" + query if query else uri
    server = scope.get("server")
    if server:
        env["SERVER_NAME"] = str(server[0])
        env["SERVER_PORT"] = str(server[1]) if server[1] is not None else ""
    client = scope.get("client")
    if client:
        env["REMOTE_ADDR"] = str(client[0])
        env["REMOTE_PORT"] = str(client[1])
    for name, value in scope.get("headers", ()):
        key = _HEADER_KEYS.get(name) or _header_key(name)
        value = value.decode("latin-1")
        if key in env:
            env[key] += ("; " if key == "HTTP_COOKIE" else ",") + value
        else:
            env[key] = value
    if "SERVER_NAME" not in env:
        host = env.get("HTTP_HOST", "localhost")
        name, _, port = host.rpartition(":") if not host.endswith("]") else (host, "", "")
        env["SERVER_NAME"] = name or host
        env["SERVER_PORT"] = port if name else ("443" if env["wsgi.url_scheme"] == "https" else "80")
    return env


def _status_code(status):
    return int(status[:3])


def _asgi_headers(headers):
    return [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in headers]


def _next_chunk(it):
    """The next non-empty chunk of a body iterator, or _END (on a pool thread: next() waits there)."""
    for chunk in it:
        if chunk:
            return chunk
    return _END


async def _finish(future):
    """Awaits a pool job to its end, even when the task is being cancelled (the job still runs)."""
    try:
        return await asyncio.shield(future)
    except asyncio.CancelledError:
        await asyncio.wait([future])
        raise


class ASGIApp:
    """A csgi app (a ``csgi.App``, a ``csgi.Builder`` or a WSGI callable) as an ASGI 3 application."""

    def __init__(self, app, *, threads=32):
        if hasattr(app, "build") and not callable(app):
            app = app.build()
        self.app = app if isinstance(app, App) else App(app)
        self._inline = threads == 0
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=max(threads, 4), thread_name_prefix="csgi-asgi")

    async def __call__(self, scope, receive, send):
        kind = scope["type"]
        if kind == "http":
            await self._http(scope, receive, send)
        elif kind == "lifespan":
            await self._lifespan(receive, send)
        else:
            raise RuntimeError("csgi.asgi: the %r scope is not supported" % kind)

    async def _lifespan(self, receive, send):
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return

    def _call(self, environ):
        """On a pool thread: the WSGI call (the C++ app runs without the GIL) and the first body chunk."""
        head = []

        def start_response(status, headers, exc_info=None):
            head[:] = (status, headers)

        result = self.app(environ, start_response)
        if type(result) in (list, tuple):
            return head, b"".join(result), None
        try:
            first = _next_chunk(result)
        except BaseException:
            result.close()
            raise
        return head, first, result

    async def _http(self, scope, receive, send):
        loop = asyncio.get_running_loop()
        message = await receive()
        if message["type"] != "http.request":
            return  # the client left before its request arrived
        body = bytes(message.get("body", b""))
        streamed = None
        if message.get("more_body", False):
            streamed = _StreamedInput(loop, receive, body)
            body_input = streamed
            pump = loop.create_task(streamed.pump())
        else:
            body_input = _CompleteInput(body)
            pump = None
        try:
            environ = _environ(scope, body_input)
            if self._inline and streamed is None:
                head, first, it = self._call(environ)  # an app that never blocks, on the loop
            else:
                head, first, it = await _finish(loop.run_in_executor(self._pool, self._call, environ))
            if streamed is not None:
                streamed.response_started()
            await send({"type": "http.response.start", "status": _status_code(head[0]),
                        "headers": _asgi_headers(head[1])})
            if it is None:
                await send({"type": "http.response.body", "body": first})
                return
            if pump is None:
                streamed = _DisconnectWatch(receive)
                pump = loop.create_task(streamed.pump())
            await self._stream(loop, send, first, it, streamed.gone)
        finally:
            if pump is not None:
                pump.cancel()

    async def _stream(self, loop, send, chunk, it, gone):
        """Sends a body iterator's chunks until its end or the client's; closes it on every exit."""
        try:
            while chunk is not _END and not gone.is_set():
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
                chunk = await _finish(loop.run_in_executor(self._pool, _next_chunk, it))
            if not gone.is_set():
                await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            await _finish(loop.run_in_executor(self._pool, it.close))


class _DisconnectWatch:
    """Receives after a complete request body, to see the client leave while a response streams."""

    def __init__(self, receive):
        self._receive = receive
        self.gone = asyncio.Event()

    async def pump(self):
        while (await self._receive()).get("type") != "http.disconnect":
            pass
        self.gone.set()


def asgi(app, *, threads=32):
    """A csgi app as an ASGI 3 application for uvicorn, hypercorn or a Starlette/FastAPI ``mount``.

    ``app``: a ``csgi.App`` (``load_app()``, ``Builder.build()``, the built-ins), a ``csgi.Builder`` or
    any WSGI callable. The app runs on a pool of ``threads`` threads with the GIL released; the event
    loop never waits for it. ``threads=0``: the app is called on the event loop's thread when the request
    body came whole (as ``csgi serve --app-threads 0`` calls it on the io thread): for apps that never
    block (a delayed response must be answered at once); streamed bodies and responses still use a pool."""
    return ASGIApp(app, threads=threads)
