"""The ASGI ``websocket`` scope on the csgi servers (see _asgi_host.py for the event loop).

A WebSocket handshake reaches the loop as a ``csgi.AsgiSocket`` (bindings/src/asgi_websocket.cpp) while the
server's app thread waits for the answer: ``websocket.accept`` (with a subprotocol and headers) makes it a
101 and the connection runs on the server's WebSocket support; ``websocket.close`` first makes it a 403;
raising or returning without an answer, a 500 (as uvicorn and hypercorn answer). Messages from the client are queued by the
connection without the GIL and wake the loop through the socket's eventfd; the loop takes them only when
the app has received those taken before, so an app that does not read leaves them in the socket, which
bounds them. ``send()`` queues on the connection and waits while more than HIGH_WATER bytes are still
unsent (back-pressure).
"""
import asyncio
import collections
import traceback

HIGH_WATER = 1 << 20


class WebSocketCall:
    """One ASGI websocket scope: receive() and send() over a csgi.AsgiSocket."""

    __slots__ = ("app", "sock", "loop", "fd", "paused", "connected", "events", "waiter", "ended",
                 "disconnect_error")

    def __init__(self, app, sock, loop, disconnect_error):
        self.app = app
        self.sock = sock
        self.loop = loop
        self.fd = sock.fileno()
        self.paused = False      # the reader is off until the app has received what was taken
        self.connected = False   # websocket.connect went to the app
        self.events = collections.deque()
        self.waiter = None       # a future receive() waits on
        self.ended = None        # the websocket.disconnect message, once received
        self.disconnect_error = disconnect_error

    async def run(self, scope):
        self.loop.add_reader(self.fd, self._wake)
        try:
            await self.app(scope, self.receive, self.send)
        except BaseException as e:  # noqa: B902 - every failure of the app ends its connection
            if not (self.ended is not None and isinstance(e, OSError)):
                self.sock.fail("csgi: ASGI app raised in a WebSocket:\n" +
                               "".join(traceback.format_exception(type(e), e, e.__traceback__)))
            if isinstance(e, (KeyboardInterrupt, SystemExit)):
                raise
        finally:
            self.loop.remove_reader(self.fd)
            self.sock.detach()

    def _wake(self):
        if self.events:
            self.loop.remove_reader(self.fd)
            self.paused = True
            return
        self.events.extend(self.sock.take())
        if self.events and self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(None)

    async def receive(self):
        if not self.connected:
            self.connected = True
            return {"type": "websocket.connect"}
        if not self.events and self.paused:
            self.paused = False
            self.loop.add_reader(self.fd, self._wake)
            self.events.extend(self.sock.take())
        while not self.events:
            if self.ended is not None:
                return self.ended
            self.waiter = self.loop.create_future()
            try:
                await self.waiter
            finally:
                self.waiter = None
        message = self.events.popleft()
        if message["type"] == "websocket.disconnect":
            self.ended = message
        return message

    async def send(self, message):
        kind = message["type"]
        if kind == "websocket.accept":
            self.sock.accept(message.get("subprotocol"), message.get("headers"))
        elif kind == "websocket.send":
            data = message.get("bytes")
            if data is None:
                data = message.get("text")
            if data is None:
                raise TypeError("websocket.send needs 'bytes' or 'text'")
            if not isinstance(data, (bytes, str)):
                data = bytes(data)
            while self.sock.buffered() > HIGH_WATER and self.ended is None:
                await asyncio.sleep(0.002)
            if not self.sock.send(data):
                await asyncio.sleep(0)  # a chance to be cancelled first
                raise self.disconnect_error("the WebSocket is closed")
        elif kind == "websocket.close":
            self.sock.close(int(message.get("code") or 1000), message.get("reason") or "")
        else:
            raise RuntimeError("unexpected ASGI message %r in a websocket scope" % kind)
