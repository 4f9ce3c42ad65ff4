"""ASGI 3 applications on the csgi servers: ``csgi.from_asgi(app)``, ``csgi serve --asgi module:app``.

One asyncio event loop (uvloop's when installed) runs on a thread of each serving process. The server's
threads never take the GIL for a request: the csgi.App (bindings/src/from_asgi.cpp) answers with a
delayed response and queues its Responder with the env; the queue wakes the loop through an eventfd,
and the loop takes the waiting requests in batches, builds each ``http`` scope from the env and runs the
app; WebSocket handshakes come through a second queue and run as ``websocket`` scopes (_asgi_ws.py).
``send()`` answers from the loop: a complete body when the loop's pass ends, with the others completed
in that pass (at most 16 held; one wake-up of the io thread for the lot), a streamed one through the response's
Writer, its writes on a pool thread: the chunks sent within one pass of the loop go out as one write when
the pass ends, and ``send()`` waits while a write is in flight (the server's back-pressure reaches the
app; after a write that failed because the client left, ``send()`` raises ``ClientDisconnected``). The request
body is read by the csgi.App before it queues the request (on the server's app thread, within its body
limit: the adapter's input is not readable once the app returned its delayed response), and
``receive()`` gives it in one ``http.request`` message; then it waits for the end of the exchange and
reports ``http.disconnect``, which comes early when the client is seen to leave (a failed write). ``lifespan`` startup runs when the loop starts (a failure raises
``LifespanFailed`` with the app's message); shutdown when the process ends (``atexit``, and before a
prefork worker's ``_exit``).
"""
import asyncio
import atexit
import concurrent.futures
import inspect
import os
import sys
import threading
import traceback

class ClientDisconnected(OSError):
    """Raised by send() once the client has gone (after a chance for the app to be cancelled)."""


class LifespanFailed(RuntimeError):
    """The app's lifespan startup failed (``lifespan.startup.failed`` or an exception)."""


_TASK_NAME = "csgi-asgi-http"
# Bytes of a streamed body a loop pass holds before send() waits for them to be written.
_COALESCE_LIMIT = 65536


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


def _traceback(exc):
    return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))


def _call_type():
    from ._csgi import AsgiCall

    class _Call(AsgiCall):
        """One request on the loop. receive() and send() are AsgiCall's (C): the body message,
        http.response.start and a complete http.response.body need no coroutine; what has to wait comes
        here (_receive_slow, _send_slow)."""

        __slots__ = ("_chunks", "_size", "_writing", "_flush_due", "_head", "_last")

        async def run(self):
            try:
                await self.host.app(self.scope, self.receive, self.send)
            except BaseException as e:  # noqa: B902 - every failure of the app ends its response
                if not (self.gone and isinstance(e, OSError)):
                    if self.finished:
                        self._log("csgi: ASGI app raised after its response ended:\n" + _traceback(e))
                    else:
                        if self.streaming and isinstance(e, Exception):
                            await self._drained()  # what the app sent goes out before the response is cut
                        self.finished = True
                        self._fail("the ASGI app raised:\n" + _traceback(e))
                self.end()
                if isinstance(e, (KeyboardInterrupt, SystemExit)):
                    raise
                return
            if not self.finished and not self.gone:
                if self.streaming:
                    await self._drained()
                self.finished = True
                self._fail("the ASGI app returned " +
                           ("before its trailers ended" if self.body_ended else
                            "before its response body ended" if self.started else "without sending a response"))
            if self.ended is not None:
                self.end()

        def end(self):
            if self.ended is not None and not self.ended.done():
                self.ended.set_result(None)

        async def _receive_slow(self):
            """After the body: waits for the end of the exchange, then says http.disconnect."""
            if self.ended is None:
                self.ended = self.host.loop.create_future()
            if not (self.finished or self.gone):
                await self.ended
            return {"type": "http.disconnect"}

        async def _send_slow(self, message):
            kind = message["type"]
            if kind == "http.response.start":
                if self.started:
                    raise RuntimeError("http.response.start sent twice")
                self.started = True
                self.status = int(message["status"])
                self.headers = message.get("headers", ())
                self.trailers = bool(message.get("trailers", False))
                return
            if kind == "http.response.trailers":
                await self._send_trailers(message)
                return
            if kind != "http.response.body":
                raise RuntimeError("unexpected ASGI message %r" % kind)
            if not self.started:
                raise RuntimeError("http.response.body before http.response.start")
            if self.gone:
                await self.left()
            if self.finished or self.body_ended:
                raise RuntimeError("http.response.body after the last one")
            body = message.get("body", b"")
            if type(body) is not bytes:
                body = bytes(body)
            more = message.get("more_body", False)
            if not self.streaming:
                if not more and not self.trailers:
                    self.finished = True
                    self._respond(body)
                    self.end()
                    return
                self.streaming = True
                self._chunks, self._size, self._writing, self._flush_due = [], 0, None, False
                self._head, self._last = True, False
            if body:
                self._chunks.append(body)
                self._size += len(body)
            if not more:
                if self.trailers:
                    self.body_ended = True
                else:
                    self.finished = True
                    self._last = True
            if self._size < _COALESCE_LIMIT:
                if self._writing is None and not self._flush_due:
                    self._flush_due = True
                    self.host.loop.call_soon(self._flush)
                return  # held: written when the pass ends, or after the write in flight
            if self._writing is None:
                self._flush()
            else:
                await asyncio.shield(self._writing)  # back-pressure: one write in flight, the next held

        def _flush(self):
            """At the end of the loop's pass: what the app sent in it goes to the writer in one write, on a
            pool thread (write() waits under back-pressure). A response that began and ended within the
            pass is answered as a complete one, from the loop thread."""
            self._flush_due = False
            if self._writing is not None or (self.finished and not self._last):
                return
            chunks, head, last = self._chunks, self._head, self._last
            if not chunks and not head and not last:
                return
            data = chunks[0] if len(chunks) == 1 else b"".join(chunks)
            self._chunks, self._size, self._head, self._last = [], 0, False, False
            if head and last:
                self._respond(data)
                self.end()
                return
            if not data and not head:
                self._close()
                self.end()
                return
            self._writing = self.host.loop.run_in_executor(self.host.pool, self._out, head, data, last)
            self._writing.add_done_callback(self._written)

        def _out(self, head, data, last):
            """On a pool thread: the head (once), the data, the end; False once the client has gone."""
            if head:
                self._start()
            ok = not data or self._write(data)
            if ok and last:
                self._close()
            return ok

        def _written(self, fut):
            self._writing = None
            exc = None if fut.cancelled() else fut.exception()
            if exc is not None and not self.gone:
                self.gone = True  # the app's next send() raises
                self._fail("the ASGI app's streamed response failed:\n" + _traceback(exc))
                self.end()
                return
            ok = exc is None and not fut.cancelled() and fut.result()
            if not ok:
                if not self.gone:
                    self.gone = True
                    self.finished = True
                    self._chunks = []
                    self._close()
                    self.end()
                return
            if self.finished and not self._chunks and not self._last:
                self.end()  # closed by _out, or failed meanwhile
                return
            if self._chunks or self._last:
                self._flush()

        async def _drained(self):
            """Until what the app sent is written, while the app sends no more: the write in flight, then one
            of the chunks held behind it."""
            for _ in range(3):
                if self._writing is None:
                    self._flush()
                if self._writing is None:
                    return
                await asyncio.shield(self._writing)

        async def _send_trailers(self, message):
            """http.response.trailers after the last body message: the fields go to the writer, which
            ends with the last message (more_trailers false)."""
            if not self.trailers:
                raise RuntimeError("http.response.trailers without trailers in http.response.start")
            if self.gone:
                await self.left()
            if not self.body_ended:
                raise RuntimeError("http.response.trailers before the last http.response.body")
            if self.finished:
                raise RuntimeError("http.response.trailers after the last one")
            await self._drained()
            if self.gone:
                await self.left()
            fields = self.trailer_fields or []
            fields.extend(message.get("headers", ()))
            self.trailer_fields = fields
            if message.get("more_trailers", False):
                return
            self.finished = True
            self._set_trailers(fields)
            self._close()
            self.end()

        async def left(self):
            """send() once the client has gone: a chance to be cancelled (Starlette cancels a streaming
            response when receive() reports the disconnect), then ClientDisconnected."""
            await asyncio.sleep(0)
            raise ClientDisconnected("the client disconnected")

    return _Call


class AsgiHost:
    """Owns the event loop thread of this process, the request queue it drains and the lifespan of the
    app; ``csgi.from_asgi`` returns the csgi.App that feeds the queue."""

    def __init__(self, app, *, lifespan="auto", start=True, threads=16, start_in_children=False):
        from ._csgi import AsgiQueue, AsgiSocketQueue
        self._call = _call_type()
        if lifespan not in ("auto", "on", "off"):
            raise ValueError("lifespan must be 'auto', 'on' or 'off'")
        self.app = app
        self.lifespan = lifespan
        self.threads = threads
        self.queue = AsgiQueue()
        self.sockets = AsgiSocketQueue()
        self.loop = None
        self.thread = None
        self.pool = None
        self.state = None
        self._lifespan_queue = None
        self._shutdown_done = None
        self._stopped = None
        self._pid = None
        self._lock = threading.Lock()
        self._start_in_children = start_in_children or start
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
        """In a forked child: the loop thread was the parent's. Start this process's own."""
        self._lock = threading.Lock()
        self.loop = self.thread = self.pool = None
        self._lifespan_queue = self._shutdown_done = None
        self._pid = None
        self.queue.reset()
        self.sockets.reset()
        if self._start_in_children:
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
            self.pool = concurrent.futures.ThreadPoolExecutor(self.threads, thread_name_prefix="csgi-asgi-io")
            self.loop = _new_loop()
            started = threading.Event()
            self.thread = threading.Thread(target=self._run, args=(started,), name="csgi-asgi-loop", daemon=True)
            self.thread.start()
            started.wait()
            if self.lifespan != "off":
                asyncio.run_coroutine_threadsafe(self._startup(), self.loop).result()
            self.loop.call_soon_threadsafe(self.loop.add_reader, self.queue.fileno(), self._drain)
            self.loop.call_soon_threadsafe(self.loop.add_reader, self.sockets.fileno(), self._drain_sockets)

    def _run(self, started):
        from ._csgi import _batch_thread, _flush_responses
        # SCHED_BATCH (bindings/src/sched_policy.hpp): the io thread, this thread and anyio's worker threads,
        # which this thread starts, hand each request over without preempting one another.
        _batch_thread()
        asyncio.set_event_loop(self.loop)
        self._stopped = self.loop.create_future()
        self.loop.call_soon(started.set)

        async def root():
            await self._stopped

        try:
            # The loop runs one root task for its life, as asyncio.run() and uvicorn's loop do: anyio (Starlette's
            # and FastAPI's run_in_threadpool) ties its worker threads to the root task; without one it ties each
            # to the request's task and ends it with the request, a new thread per `def` endpoint call.
            self.loop.run_until_complete(root())
        finally:
            _flush_responses()  # responses of the last pass, whose callback the stopped loop left

    def _drain(self):
        loop = self.loop
        calls = self.queue.take(self._call, self, self.state)
        if loop.get_task_factory() is not None:
            for call in calls:
                loop.create_task(call.run())
            return
        # What create_task() does without a task factory, but named: a Task without a name formats
        # "Task-N" for each request.
        task = asyncio.Task
        for call in calls:
            task(call.run(), loop=loop, name=_TASK_NAME)

    def _drain_sockets(self):
        from ._asgi_ws import WebSocketCall
        state = self.state
        for sock in self.sockets.take():
            try:
                scope = sock.scope()
            except Exception as e:  # noqa: BLE001
                sock.fail("csgi: cannot build the ASGI websocket scope:\n" + _traceback(e))
                sock.detach()
                continue
            if state is not None:
                scope["state"] = dict(state)
            self.loop.create_task(WebSocketCall(self.app, sock, self.loop, ClientDisconnected).run(scope))

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
            if not startup.done():  # returned at once: the app does not speak lifespan
                self.state = None
                startup.set_result(None)
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

    def _stop_loop(self):
        if not self._stopped.done():
            self._stopped.set_result(None)

    def stop(self):
        """Runs the lifespan shutdown and stops the loop thread of this process (once)."""
        with self._lock:
            if self._pid != os.getpid() or self.loop is None:
                return
            loop, self._pid = self.loop, None
            try:
                loop.call_soon_threadsafe(loop.remove_reader, self.queue.fileno())
                loop.call_soon_threadsafe(loop.remove_reader, self.sockets.fileno())
                asyncio.run_coroutine_threadsafe(self._shutdown(), loop).result(35)
            except Exception:  # noqa: BLE001
                sys.stderr.write("csgi: ASGI lifespan shutdown failed:\n" + traceback.format_exc())
            loop.call_soon_threadsafe(self._stop_loop)
            self.thread.join(5)
            self.pool.shutdown(wait=False)


def from_asgi(app, *, lifespan="auto", start=True, threads=16, start_in_children=False):
    """An ASGI 3 app as a ``csgi.App``: behind C++ middleware, mounted beside C++ apps, served by
    ``csgi.serve()`` or the csgi adapters. ``start``: start the event loop thread and run the lifespan
    startup now (raises LifespanFailed); a process forked afterwards starts its own at once, as does one
    forked with ``start_in_children`` (``csgi serve --asgi --workers N``; a failing startup ends it with
    status 3). ``threads``: the pool that reads request bodies and writes streamed responses."""
    from ._csgi import _asgi_app
    host = AsgiHost(app, lifespan=lifespan, start=start, threads=threads, start_in_children=start_in_children)
    return _asgi_app(host.queue, host, host.sockets)


def load_asgi_app(spec, workers=0):
    """``csgi serve --asgi``: imports ``module:app`` as gunicorn would and returns it as a csgi.App. With
    workers, the master starts nothing: each worker starts its loop and lifespan when it is forked. A
    csgi.App (C++ middleware in front of an ASGI app: ``csgi.Builder().use(...).to_app(asgi_app)``) is
    served as it is: its ASGI host was made with it."""
    from ._csgi import App
    from ._wsgi import import_wsgi_app
    app = import_wsgi_app(spec, kind="asgi")
    if isinstance(app, App):
        return app
    return from_asgi(app, start=workers == 0, start_in_children=workers > 0)
