"""ASGI 3 applications on the csgi servers: ``csgi.from_asgi(app)``, ``csgi serve --asgi module:app``.

One asyncio event loop (uvloop's when installed) runs on a thread of each serving process. A request
reaches the app as a WSGI call of ``AsgiHost`` (through the WSGI bridge of ``csgi.App``, on a thread of
the server): it builds the ``http`` scope, hands the request to the loop and waits, without the GIL,
until the app has sent its response head and first body message. A complete body goes back in one piece
(with its Content-Length); otherwise the rest streams from a queue that ``send()`` fills and the server
drains: ``send()`` waits while ``_HIGH_WATER`` bytes are queued. ``receive()`` reads ``wsgi.input`` on a
pool thread, as the app asks (a body is never read ahead of the app), then waits for the end of the
exchange: ``http.disconnect`` comes when the response is complete or the server stopped taking it (the
client left). ``lifespan`` startup runs when the loop starts (a failure raises ``LifespanFailed`` with
the app's message); shutdown when the process ends (``atexit``, and before a prefork worker's ``_exit``).
"""
import asyncio
import atexit
import collections
import concurrent.futures
import inspect
import os
import sys
import threading
import traceback

_HIGH_WATER = 1 << 18   # response bytes queued before send() waits
_READ_SIZE = 1 << 16    # request body bytes per http.request message
_END = object()


class ClientDisconnected(OSError):
    """Raised by send() once the client has gone (after a chance for the app to be cancelled)."""


class LifespanFailed(RuntimeError):
    """The app's lifespan startup failed (``lifespan.startup.failed`` or an exception)."""


class _Failure:
    __slots__ = ("exc",)

    def __init__(self, exc):
        self.exc = exc


def is_asgi_app(obj):
    """True for an ASGI 3 callable: an ``async def`` function or an object with an ``async def __call__``
    (Starlette, FastAPI, Quart, Django's ASGIHandler...). WSGI callables and csgi.App are not."""
    if inspect.iscoroutinefunction(obj):
        return True
    call = getattr(type(obj), "__call__", None)
    return not inspect.isclass(obj) and inspect.iscoroutinefunction(call)


def _new_loop():
    try:
        import uvloop
        return uvloop.new_event_loop()
    except ImportError:
        return asyncio.new_event_loop()


def _scope(environ, state):
    headers = []
    for key, value in environ.items():
        if key.startswith("HTTP_"):
            headers.append((key[5:].replace("_", "-").lower().encode("latin-1"), value.encode("latin-1")))
    content_type = environ.get("CONTENT_TYPE")
    if content_type:
        headers.append((b"content-type", content_type.encode("latin-1")))
    content_length = environ.get("CONTENT_LENGTH")
    if content_length:
        headers.append((b"content-length", content_length.encode("latin-1")))
    uri = environ.get("REQUEST_URI", "")
    raw_path = uri.partition("?")[0].encode("latin-1") if uri else None
    scope = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": environ.get("SERVER_PROTOCOL", "HTTP/1.1")[5:] or "1.1",
        "method": environ["REQUEST_METHOD"],
        "scheme": environ.get("wsgi.url_scheme", "http"),
        "path": environ.get("PATH_INFO", "").encode("latin-1").decode("utf-8", "replace") or "/",
        "raw_path": raw_path,
        "query_string": environ.get("QUERY_STRING", "").encode("latin-1"),
        "root_path": environ.get("SCRIPT_NAME", "").encode("latin-1").decode("utf-8", "replace"),
        "headers": headers,
        "server": (environ.get("SERVER_NAME", ""), int(environ.get("SERVER_PORT") or 0)),
    }
    addr = environ.get("REMOTE_ADDR")
    if addr:
        scope["client"] = (addr, int(environ.get("REMOTE_PORT") or 0))
    if state is not None:
        scope["state"] = dict(state)
    return scope


class _Exchange:
    """One request: its scope, receive() and send() on the loop, and the WSGI side's wait and iterator."""

    def __init__(self, host, environ):
        self.host = host
        self.loop = host.loop
        self.environ = environ
        self.scope = _scope(environ, host.state)
        length = environ.get("CONTENT_LENGTH")
        self.remaining = int(length) if length and length.isdigit() else None
        self.body_done = self.remaining == 0 or (self.remaining is None and "HTTP_TRANSFER_ENCODING" not in environ)
        self.body_given = False     # an http.request message went to the app
        self.started = False        # http.response.start received
        self.head_given = False     # the WSGI side has the head (and the first body)
        self.finished = False       # the last body message was sent
        self.gone = False           # the server stopped taking the body (the client left)
        self.status = 200
        self.headers = []
        self.result = None          # ("complete", body) | ("stream", first) | ("error", exc)
        self.ready = threading.Lock()
        self.ready.acquire()
        self.cv = threading.Condition(threading.Lock())
        self.chunks = collections.deque()
        self.queued = 0
        self.room = None            # an asyncio future send() waits on while the queue is full
        self.ended = None           # an asyncio future: the exchange is over (receive() → disconnect)

    # ------------------------------------------------------------------ on the loop
    def begin(self):
        self.ended = self.loop.create_future()
        self.loop.create_task(self.run())

    async def run(self):
        try:
            await self.host.app(self.scope, self.receive, self.send)
        except BaseException as e:  # noqa: B902 - every failure of the app ends its response
            if self.gone and isinstance(e, OSError):
                self.end()  # the client left and send() said so: nothing to report
                return
            self.fail(e)
            if isinstance(e, (KeyboardInterrupt, SystemExit)):
                raise
            return
        if not self.head_given:
            self.fail(RuntimeError("the ASGI app returned without sending a response"))
        elif not self.finished and not self.gone:
            self.fail(RuntimeError("the ASGI app returned before its response body ended"))

    def fail(self, exc):
        if not self.head_given:
            self.give(("error", exc))
        elif not self.finished and not self.gone:
            self.finished = True
            self.push(_Failure(exc))
        else:
            sys.stderr.write("csgi: ASGI app raised after its response ended:\n" +
                             "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)))
        self.end()

    def give(self, result):
        self.head_given = True
        self.result = result
        self.ready.release()

    def end(self):
        if self.ended is not None and not self.ended.done():
            self.ended.set_result(None)

    async def receive(self):
        if self.body_done and not self.body_given:
            self.body_given = True
            return {"type": "http.request", "body": b"", "more_body": False}
        if not self.body_done:
            want = _READ_SIZE if self.remaining is None else min(_READ_SIZE, self.remaining)
            try:
                data = await self.loop.run_in_executor(self.host.pool, self.environ["wsgi.input"].read, want)
            except Exception:  # the server refused the body (400/408/413) or the client left
                self.body_done = True
                self.gone = True
                self.end()
                return {"type": "http.disconnect"}
            self.body_given = True
            if self.remaining is not None:
                self.remaining -= len(data)
                self.body_done = self.remaining <= 0 or not data
            else:
                self.body_done = not data
            return {"type": "http.request", "body": data, "more_body": not self.body_done}
        await self.ended
        return {"type": "http.disconnect"}

    async def send(self, message):
        kind = message["type"]
        if kind == "http.response.start":
            if self.started:
                raise RuntimeError("http.response.start sent twice")
            self.started = True
            self.status = int(message["status"])
            self.headers = message.get("headers", [])
            return
        if kind != "http.response.body":
            raise RuntimeError("unexpected ASGI message %r" % kind)
        if not self.started:
            raise RuntimeError("http.response.body before http.response.start")
        if self.gone:
            await self.left()
        if self.finished:
            raise RuntimeError("http.response.body after the last one")
        body = message.get("body", b"")
        more = message.get("more_body", False)
        if not self.head_given:
            if more:
                self.give(("stream", bytes(body)))
            else:
                self.finished = True
                self.give(("complete", bytes(body)))
                self.end()
            return
        if body:
            self.push(bytes(body))
        if not more:
            self.finished = True
            self.push(_END)
            self.end()
            return
        while self.queued >= _HIGH_WATER and not self.gone:
            self.room = self.loop.create_future()
            await self.room
        if self.gone:
            await self.left()

    async def left(self):
        """send() once the client has gone: a chance to be cancelled (Starlette cancels a streaming
        response when receive() reports the disconnect), then ClientDisconnected."""
        await asyncio.sleep(0)
        raise ClientDisconnected("the client disconnected")

    def push(self, item):
        with self.cv:
            self.chunks.append(item)
            if type(item) is bytes:
                self.queued += len(item)
            self.cv.notify()

    def on_room(self):
        if self.room is not None and not self.room.done():
            self.room.set_result(None)

    def on_gone(self):
        self.gone = True
        self.on_room()
        self.end()

    # ------------------------------------------------------------------ on the server's thread
    def wait(self):
        self.ready.acquire()  # without the GIL
        return self.result

    def body(self, first):
        """The rest of a streamed body, as the server pulls it; closed early when the client left."""
        done = False
        try:
            if first:
                yield first
            while True:
                with self.cv:
                    while not self.chunks:
                        self.cv.wait()
                    item = self.chunks.popleft()
                    if type(item) is bytes:
                        before = self.queued
                        self.queued -= len(item)
                        wake = before >= _HIGH_WATER > self.queued
                    else:
                        wake = False
                if wake:
                    self.loop.call_soon_threadsafe(self.on_room)
                if item is _END:
                    done = True
                    return
                if type(item) is _Failure:
                    done = True
                    raise item.exc
                yield item
        finally:
            if not done:
                self.loop.call_soon_threadsafe(self.on_gone)


class AsgiHost:
    """An ASGI app as a WSGI callable run by csgi's WSGI bridge (``csgi.from_asgi`` wraps it in a
    ``csgi.App``); owns the event loop thread and the lifespan of the app in this process."""

    def __init__(self, app, *, lifespan="auto", start=True, threads=16, start_in_children=False):
        if lifespan not in ("auto", "on", "off"):
            raise ValueError("lifespan must be 'auto', 'on' or 'off'")
        self.app = app
        self.lifespan = lifespan
        self.threads = threads
        self.loop = None
        self.thread = None
        self.pool = None
        self.state = None
        self._lifespan_queue = None
        self._shutdown_done = None
        self._pid = None
        self._lock = threading.Lock()
        self._start_in_children = start_in_children
        os.register_at_fork(after_in_child=self._forget)
        atexit.register(self.stop)
        try:
            from ._csgi import _at_process_end
            _at_process_end(self.stop)  # prefork workers leave with _exit(): no atexit there
        except ImportError:  # pragma: no cover
            pass
        if start:
            self.start()

    def _forget(self):
        """In a forked child: the loop thread is the parent's; start a new one on the first request or
        when the server says it serves (start())."""
        self._lock = threading.Lock()
        self.loop = self.thread = self.pool = None
        self._lifespan_queue = self._shutdown_done = None
        self._pid = None
        if self._start_in_children:  # a worker of `csgi serve --asgi --workers N`
            try:
                self.start()
            except BaseException as e:  # noqa: B902
                sys.stderr.write("csgi: ASGI lifespan startup failed in worker %d:\n%s\n" % (os.getpid(), e))
                sys.stderr.flush()
                os._exit(3)

    def start(self):
        """Starts the loop thread of this process and runs the lifespan startup; raises LifespanFailed."""
        with self._lock:
            if self._pid == os.getpid():
                return
            self._pid = os.getpid()
            self.pool = concurrent.futures.ThreadPoolExecutor(self.threads, thread_name_prefix="csgi-asgi-read")
            self.loop = _new_loop()
            started = threading.Event()
            self.thread = threading.Thread(target=self._run, args=(started,), name="csgi-asgi-loop", daemon=True)
            self.thread.start()
            started.wait()
            if self.lifespan != "off":
                asyncio.run_coroutine_threadsafe(self._startup(), self.loop).result()

    def _run(self, started):
        asyncio.set_event_loop(self.loop)
        self.loop.call_soon(started.set)
        self.loop.run_forever()

    async def _startup(self):
        loop = asyncio.get_running_loop()
        self.state = {}
        queue = asyncio.Queue()
        startup = loop.create_future()
        shutdown = loop.create_future()
        sent = []

        async def send(message):
            kind = message["type"]
            sent.append(kind)
            if kind == "lifespan.startup.complete" and not startup.done():
                startup.set_result(None)
            elif kind == "lifespan.startup.failed" and not startup.done():
                startup.set_exception(LifespanFailed(message.get("message", "") or "lifespan startup failed"))
            elif kind == "lifespan.shutdown.complete" and not shutdown.done():
                shutdown.set_result(None)
            elif kind == "lifespan.shutdown.failed" and not shutdown.done():
                shutdown.set_exception(LifespanFailed(message.get("message", "") or "lifespan shutdown failed"))

        async def run():
            scope = {"type": "lifespan", "asgi": {"version": "3.0", "spec_version": "2.0"}, "state": self.state}
            try:
                await self.app(scope, queue.get, send)
            except BaseException as e:  # noqa: B902
                if not startup.done():
                    if not sent and self.lifespan == "auto":
                        self.state = None
                        startup.set_result(None)  # the app does not speak lifespan
                    else:
                        startup.set_exception(LifespanFailed(
                            "".join(traceback.format_exception(type(e), e, e.__traceback__))))
                elif not shutdown.done():
                    shutdown.set_exception(e)
            if not shutdown.done():
                shutdown.set_result(None)

        loop.create_task(run())
        await queue.put({"type": "lifespan.startup"})
        await startup
        self._lifespan_queue = queue
        self._shutdown_done = shutdown

    async def _shutdown(self):
        if self._lifespan_queue is None:
            return
        await self._lifespan_queue.put({"type": "lifespan.shutdown"})
        await asyncio.wait_for(self._shutdown_done, 30)

    def stop(self):
        """Runs the lifespan shutdown and stops the loop thread of this process (once)."""
        with self._lock:
            if self._pid != os.getpid() or self.loop is None:
                return
            loop, self._pid = self.loop, None
            try:
                asyncio.run_coroutine_threadsafe(self._shutdown(), loop).result(35)
            except Exception:  # noqa: BLE001
                sys.stderr.write("csgi: ASGI lifespan shutdown failed:\n" + traceback.format_exc())
            loop.call_soon_threadsafe(loop.stop)
            self.thread.join(5)
            self.pool.shutdown(wait=False)

    def __call__(self, environ, start_response):
        if self._pid != os.getpid():
            self.start()
        ex = _Exchange(self, environ)
        self.loop.call_soon_threadsafe(ex.begin)
        kind, value = ex.wait()
        if kind == "error":
            raise value
        reason = _reason(ex.status)
        headers = [(n.decode("latin-1"), v.decode("latin-1")) for n, v in ex.headers]
        start_response("%d %s" % (ex.status, reason), headers)
        if kind == "complete":
            return [value]
        return ex.body(value)


def _reason(status):
    try:
        from http import HTTPStatus
        return HTTPStatus(status).phrase
    except ValueError:
        return ""


def from_asgi(app, *, lifespan="auto", start=True, threads=16, start_in_children=False):
    """An ASGI 3 app as a ``csgi.App``: behind C++ middleware, mounted beside C++ apps, served by
    ``csgi.serve()`` or the csgi adapters. ``start``: start the event loop thread and run the lifespan
    startup now (raises LifespanFailed); otherwise on the first request. A forked child starts its own
    loop (and lifespan) on its first request, or at once with ``start_in_children``."""
    from ._csgi import App
    return App(AsgiHost(app, lifespan=lifespan, start=start, threads=threads, start_in_children=start_in_children))


def load_asgi_app(spec, workers=0):
    """``csgi serve --asgi``: imports ``module:app`` as gunicorn would and returns it as a csgi.App. With
    workers, the master starts nothing: each worker starts its loop and lifespan when it is forked."""
    from ._wsgi import import_wsgi_app
    return from_asgi(import_wsgi_app(spec), start=workers == 0, start_in_children=workers > 0)
