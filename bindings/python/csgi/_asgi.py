"""csgi apps as ASGI 3 applications: ``csgi.asgi(app)``.

The scope becomes the env in C++ (``csgi.App._asgi``, bindings/src/to_asgi.cpp) by the rules of the WSGI
bridge (the PEP 3333 environ uvicorn's and Starlette's WSGI adapters build: SCRIPT_NAME from
``root_path``, headers, client/server, scheme, dot segments), and the answer comes back as the ASGI
status, header pairs and body. By default the C++ app is called on the event loop's thread (a request
whose framing says it has no body is answered without a ``receive()``) until a call holds the loop
longer than ``_INLINE_LIMIT`` (ASGIApp._on_loop); from then on it runs on a thread pool with the GIL
released, and the event loop only awaits. ``threads=0`` keeps it on the loop, ``threads=N`` puts it on
a pool of N from the start. The request body reaches ``csgi.input`` through a buffer that the event loop
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
import time

try:
    import resource
except ImportError:  # pragma: no cover
    resource = None

from ._csgi import App, AsgiWorkers

_HIGH_WATER = 1 << 16      # request body bytes buffered ahead of the app's reads
_LATE_BODY_LIMIT = 4 << 20  # request body bytes kept for an app still streaming its response
_END = object()
_TRAILERS = "http.response.trailers"  # the ASGI extension a server offers in scope["extensions"]
_WS_RESPONSE = "websocket.http.response"  # the one that lets a refused WebSocket handshake have a status
_WS_REFUSAL = (b"this server offers no WebSocket here (csgix.websocket is absent under csgi.asgi): serve the app "
               b"with csgi serve\n")
_INLINE_LIMIT = 0.002       # seconds: a call on the event loop longer than this is slow


def _thread_usage():
    """(voluntary context switches, CPU seconds) of the calling thread; None where Linux's RUSAGE_THREAD
    is missing. The CPU time is the thread's clock (nanoseconds), not getrusage's, which is counted in
    scheduler ticks (4 ms)."""
    who = getattr(resource, "RUSAGE_THREAD", None) if resource else None
    if who is None:
        return None
    return resource.getrusage(who).ru_nvcsw, time.thread_time()


def _held_the_loop(before, after):
    """Whether a slow call waited (blocked) or computed longer than _INLINE_LIMIT, rather than being
    preempted; True when the usage is unknown."""
    if before is None or after is None:
        return True
    return after[0] > before[0] or after[1] - before[1] > _INLINE_LIMIT
_AUTO_THREADS = 32          # the pool of a threads=None app


class ClientDisconnected(OSError):
    """Raised by wsgi.input.read() when the client went away before its request body ended."""


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


def _trailers_of(it):
    """The trailer fields of a body iterated to its end (a csgi BodyIterator's; none for other iterables)."""
    take = getattr(it, "trailers", None)
    return take() if take is not None else []


def _next_chunk(it):
    """The next non-empty chunk of a body iterator, or _END (on a pool thread: next() waits there)."""
    for chunk in it:
        if chunk:
            return chunk
    return _END


def _first_chunk(it):
    """_next_chunk() that closes the iterator when it raises."""
    try:
        return _next_chunk(it)
    except BaseException:
        it.close()
        raise


async def _finish(future):
    """Awaits a pool job to its end, even when the task is being cancelled (the job still runs)."""
    try:
        return await asyncio.shield(future)
    except asyncio.CancelledError:
        await asyncio.wait([future])
        raise


class ASGIApp:
    """A csgi app (a ``csgi.App``, a ``csgi.Builder`` or a WSGI callable) as an ASGI 3 application."""

    def __init__(self, app, *, threads=None):
        if hasattr(app, "build") and not callable(app):
            app = app.build()
        self.app = app if isinstance(app, App) else App(app)
        self._auto = threads is None  # on the loop until a call holds it longer than _INLINE_LIMIT (_on_loop)
        self._suspect = False  # a call was slow: the next ones' thread usage is read
        if self._auto:
            threads = _AUTO_THREADS
        elif threads < 0:
            raise ValueError("threads must be None, 0 or more")
        self._inline = self._auto or threads == 0
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=max(threads, 4), thread_name_prefix="csgi-asgi")
        self._workers = AsgiWorkers(threads) if threads else None  # its threads start with the first call
        self._workers_loop = None

    async def __call__(self, scope, receive, send):
        kind = scope["type"]
        if kind == "http":
            await self._http(scope, receive, send)
        elif kind == "lifespan":
            await self._lifespan(receive, send)
        elif kind == "websocket":
            await self._refuse_websocket(scope, receive, send)
        else:
            raise RuntimeError("csgi.asgi: the %r scope is not supported" % kind)

    async def _refuse_websocket(self, scope, receive, send):
        """A WebSocket handshake, which a csgi app can only accept through csgix.websocket (absent here): 501
        with a reason where the server offers the websocket.http.response extension, as the other adapters
        answer; else websocket.close before websocket.accept, which the server answers with 403."""
        message = await receive()
        if message["type"] != "websocket.connect":
            return  # the client left before the handshake was answered
        if _WS_RESPONSE in (scope.get("extensions") or ()):
            await send({"type": _WS_RESPONSE + ".start", "status": 501,
                        "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                                    (b"content-length", b"%d" % len(_WS_REFUSAL))]})
            await send({"type": _WS_RESPONSE + ".body", "body": _WS_REFUSAL})
        else:
            await send({"type": "websocket.close", "code": 1003})

    async def _lifespan(self, receive, send):
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return

    def _call(self, scope, body):
        """The app's answer (its C++ code runs without the GIL): status, headers, the first body chunk and
        the rest as an iterator (None for a complete body). On a pool thread, or inline. With body None:
        None unless the request's framing says it has no body."""
        answer = self.app._asgi(scope, body)
        if answer is None:
            return None
        status, headers, result = answer
        if type(result) is bytes:
            return status, headers, result, None
        try:
            first = _next_chunk(result)
        except BaseException:
            result.close()
            raise
        return status, headers, first, result

    def _on_loop(self, scope, body):
        """_call on the event loop; with threads=None, timed. The first call longer than _INLINE_LIMIT makes
        the app a suspect: from then on each call's thread usage is read too, and the next slow call during
        which the thread waited (a voluntary context switch) or computed for longer than the limit sends
        the app's later calls to its pool. A thread the kernel preempted has not held the loop itself."""
        if not self._auto:
            return self._call(scope, body)
        suspect = self._suspect
        before = _thread_usage() if suspect else None
        start = time.perf_counter()
        try:
            return self._call(scope, body)
        finally:
            took = time.perf_counter() - start
            if took > _INLINE_LIMIT and self._auto:
                if not suspect:
                    self._suspect = True
                elif _held_the_loop(before, _thread_usage()):
                    self._auto = self._inline = False
                    sys.stderr.write(
                        "csgi.asgi: a call of %r held the event loop for %.1f ms; its calls run on a pool of %d "
                        "threads from now on (threads=0 keeps an app on the loop, threads=N starts it on a pool)\n"
                        % (self.app, took * 1e3, _AUTO_THREADS))

    async def _http(self, scope, receive, send):
        trailers = _TRAILERS in (scope.get("extensions") or ())
        if self._inline:
            # A request whose framing says it has no body is answered without a receive(): one C++
            # call builds the env from the scope, runs the app and returns the ASGI head and body.
            head = self._on_loop(scope, None)
            if head is not None:
                status, headers, first, it = head
                if it is None:
                    await send({"type": "http.response.start", "status": status, "headers": headers})
                    await send({"type": "http.response.body", "body": first})
                    return
                await self._answer(asyncio.get_running_loop(), receive, send, head, trailers=trailers)
                return
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
            body_input = body
            pump = None
        try:
            workers = None if streamed is not None else self._workers_on(loop)
            if self._inline and streamed is None:
                head = self._on_loop(scope, body_input)  # an app that never blocks, on the loop
            elif workers is not None:
                future = loop.create_future()
                workers.submit(self.app, scope, body_input, future)
                status, headers, result = await _finish(future)
                if type(result) is bytes:
                    head = status, headers, result, None
                else:
                    first = await _finish(loop.run_in_executor(self._pool, _first_chunk, result))
                    head = status, headers, first, result
            else:
                head = await _finish(loop.run_in_executor(self._pool, self._call, scope, body_input))
            if streamed is not None:
                streamed.response_started()
            await self._answer(loop, receive, send, head, streamed, pump, trailers)
        finally:
            if pump is not None:
                pump.cancel()

    def _workers_on(self, loop):
        """The worker threads, their completions watched by this loop; None while another running loop
        watches them (that request takes the executor path)."""
        workers = self._workers
        if workers is None or self._workers_loop is loop:
            return workers
        old = self._workers_loop
        if old is not None and not old.is_closed():
            if old.is_running():
                return None
            old.remove_reader(workers.fileno())
        loop.add_reader(workers.fileno(), workers.drain)
        self._workers_loop = loop
        return workers

    async def _answer(self, loop, receive, send, head, streamed=None, pump=None, trailers=False):
        """Sends the app's answer: a complete body in one message, an iterator's chunks as more_body
        messages while watching for the client to leave, then its trailer fields where the server takes
        them (the http.response.trailers extension; elsewhere they are dropped)."""
        status, headers, first, it = head
        if it is None:
            await send({"type": "http.response.start", "status": status, "headers": headers})
            await send({"type": "http.response.body", "body": first})
            return
        await send({"type": "http.response.start", "status": status, "headers": headers, "trailers": trailers})
        own_pump = None
        try:
            if pump is None:
                streamed = _DisconnectWatch(receive)
                pump = own_pump = loop.create_task(streamed.pump())
            await self._stream(loop, send, first, it, streamed.gone, trailers)
        finally:
            if own_pump is not None:
                own_pump.cancel()

    async def _stream(self, loop, send, chunk, it, gone, trailers=False):
        """Sends a body iterator's chunks until its end or the client's (then its trailers when asked);
        closes it on every exit."""
        try:
            while chunk is not _END and not gone.is_set():
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
                chunk = await _finish(loop.run_in_executor(self._pool, _next_chunk, it))
            if not gone.is_set():
                await send({"type": "http.response.body", "body": b"", "more_body": False})
                if trailers:
                    await send({"type": "http.response.trailers", "headers": _trailers_of(it), "more_trailers": False})
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


def asgi(app, *, threads=None):
    """A csgi app as an ASGI 3 application for uvicorn, hypercorn or a Starlette/FastAPI ``mount``.

    ``app``: a ``csgi.App`` (``load_app()``, ``Builder.build()``, the built-ins), a ``csgi.Builder`` or
    any WSGI callable. ``threads=None`` (the default): the app is called on the event loop's thread when
    the request body came whole (as ``csgi serve`` calls a C++ app on its io thread), until a call (after
    a first slow one) has held the loop longer than 2 ms, waiting or computing; from then on, as with
    ``threads=32``. ``threads=N``: the app runs
    on a pool of N threads with the GIL released; the event loop never waits for it. ``threads=0``: always
    on the loop, for apps that never block (a delayed response must be answered at once). Streamed
    request bodies and responses use a pool in every case."""
    return ASGIApp(app, threads=threads)
