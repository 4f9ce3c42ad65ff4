"""A WebSocket-over-HTTP/2 (RFC 8441) client for tests: python3-h2 on a socket, extended CONNECT streams,
and RFC 6455 frames made here (masked, as a client sends them). Used by test_h2_websocket.py and
tests/bindings/test_serve_asgi_ws.py."""
import os
import socket
import ssl
import struct
import time

import h2.config
import h2.connection
import h2.events
import h2.settings

TEXT, BINARY, CLOSE, PING, PONG, CONT = 1, 2, 8, 9, 10, 0


def frame(opcode, payload=b"", fin=True):
    """A masked client frame (RFC 6455 §5.2)."""
    n = len(payload)
    head = bytes([(0x80 if fin else 0) | opcode])
    if n < 126:
        head += bytes([0x80 | n])
    elif n < 65536:
        head += bytes([0x80 | 126]) + struct.pack("!H", n)
    else:
        head += bytes([0x80 | 127]) + struct.pack("!Q", n)
    key = os.urandom(4)
    if n == 0:
        return head + key
    mask = (key * (n // 4 + 1))[:n]
    return head + key + (int.from_bytes(payload, "big") ^ int.from_bytes(mask, "big")).to_bytes(n, "big")


def close_payload(code, reason=b""):
    return struct.pack("!H", code) + reason


class Conn:
    """python3-h2 on a socket, with WebSocket streams."""

    def __init__(self, port, tls=None, window=None, auto_ack=True):
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.s = tls.wrap_socket(s, server_hostname="localhost") if tls else s
        self.scheme = "https" if tls else "http"
        self.h2 = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding=None))
        self.h2.initiate_connection()
        if window is not None:
            self.h2.update_settings({h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: window})
        self.auto_ack = auto_ack
        self.streams = {}
        self.server_settings = {}
        self.flush()
        deadline = time.time() + 5
        while not self.server_settings and time.time() < deadline and self.pump():
            pass

    def flush(self):
        d = self.h2.data_to_send()
        if d:
            self.s.sendall(d)

    def pump(self, timeout=None):
        if timeout is not None:
            self.s.settimeout(timeout)
        try:
            d = self.s.recv(65536)
        except (ConnectionResetError, socket.timeout, ssl.SSLError):
            d = b""
        finally:
            self.s.settimeout(10)
        if not d:
            return False
        for e in self.h2.receive_data(d):
            st = self.streams.get(getattr(e, "stream_id", None))
            if isinstance(e, h2.events.RemoteSettingsChanged):
                self.server_settings.update({k: v.new_value for k, v in e.changed_settings.items()})
            elif isinstance(e, h2.events.ResponseReceived) and st:
                st["headers"] = dict(e.headers)
                st["status"] = int(st["headers"][b":status"])
            elif isinstance(e, h2.events.DataReceived):
                if st:
                    st["data"] += e.data
                    st["received"] += e.flow_controlled_length
                    if self.auto_ack:
                        self.h2.acknowledge_received_data(e.flow_controlled_length, e.stream_id)
                    else:
                        st["unacked"] += e.flow_controlled_length
            elif isinstance(e, h2.events.StreamEnded) and st:
                st["ended"] = True
            elif isinstance(e, h2.events.StreamReset) and st:
                st["reset"] = e.error_code
        self.flush()
        return True

    def open(self, path, protocol="websocket", extra=()):
        sid = self.h2.get_next_available_stream_id()
        self.streams[sid] = {"status": None, "headers": {}, "data": b"", "ended": False, "reset": None,
                             "received": 0, "unacked": 0}
        self.h2.send_headers(sid, [(":method", "CONNECT"), (":protocol", protocol), (":scheme", self.scheme),
                                   (":path", path), (":authority", "127.0.0.1"), ("sec-websocket-version", "13")] +
                             list(extra))
        self.flush()
        self.wait(lambda: self.streams[sid]["status"] is not None)
        return sid

    def get(self, path):
        sid = self.h2.get_next_available_stream_id()
        self.streams[sid] = {"status": None, "headers": {}, "data": b"", "ended": False, "reset": None,
                             "received": 0, "unacked": 0}
        self.h2.send_headers(sid, [(":method", "GET"), (":scheme", self.scheme), (":path", path),
                                   (":authority", "127.0.0.1")], end_stream=True)
        self.flush()
        self.wait(lambda: self.streams[sid]["ended"] or self.streams[sid]["reset"] is not None)
        return self.streams[sid]

    def wait(self, cond, limit=10):
        deadline = time.time() + limit
        while not cond():
            if time.time() > deadline or not self.pump(max(0.05, deadline - time.time())):
                return cond()
        return True

    def send(self, sid, data, end=False):
        """DATA within the stream's and the connection's windows."""
        while True:
            room = min(self.h2.local_flow_control_window(sid), self.h2.max_outbound_frame_size, len(data))
            if room > 0 or (not data and end):
                self.h2.send_data(sid, data[:room], end_stream=end and room == len(data))
                data = data[room:]
                self.flush()
                if not data:
                    return True
            elif not self.pump(5):
                return False

    def message(self, sid, limit=10):
        """The next server frame on `sid`: (fin, opcode, payload), or None."""
        st = self.streams[sid]
        got = []

        def parse():
            d = st["data"]
            if len(d) < 2:
                return False
            n, at = d[1] & 0x7F, 2
            if n == 126:
                if len(d) < 4:
                    return False
                n, at = struct.unpack("!H", d[2:4])[0], 4
            elif n == 127:
                if len(d) < 10:
                    return False
                n, at = struct.unpack("!Q", d[2:10])[0], 10
            if d[1] & 0x80 or len(d) < at + n:
                return False
            got.append((bool(d[0] & 0x80), d[0] & 0x0F, d[at:at + n]))
            st["data"] = d[at + n:]
            return True

        if parse() or self.wait(lambda: parse() or st["ended"] or st["reset"] is not None, limit) and got:
            return got[0]
        return None

    def close(self):
        self.s.close()
