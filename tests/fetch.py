"""fetch(): one HTTP/1.1 request on a connection of its own, sent with Connection: close, and the whole
answer read until the server closes; split_answer(): its status, head and body. Shared by the Python
tests as ports.py beside it is (each test puts this directory on sys.path)."""
import socket
import time

MAX_ANSWER = 64 << 20  # bytes: a server that never stops sending fails the test instead of filling memory


def fetch(port, path="/hello", host="127.0.0.1", timeout=10, headers="", method="GET", body=b"", sock=None):
    """`method` `path` with Host: t, `headers` (header lines, each ending in CRLF), Connection: close and
    `body`, to host:port, or on `sock` when given (a TLS socket, one bound to a chosen address); the socket
    is closed after. Returns the whole answer, as bytes. OSError when the connection fails, when the answer
    takes longer than `timeout` seconds in all, or is longer than MAX_ANSWER."""
    s = sock or socket.create_connection((host, port), timeout=timeout)
    deadline = time.monotonic() + timeout
    try:
        head = "%s %s HTTP/1.1\r\nHost: t\r\n%sConnection: close\r\n\r\n" % (method, path, headers)
        s.sendall(head.encode("latin-1") + (body.encode() if isinstance(body, str) else body))
        data = b""
        while len(data) <= MAX_ANSWER:
            if time.monotonic() > deadline:
                raise TimeoutError("no end of the answer to %s %s within %s s" % (method, path, timeout))
            chunk = s.recv(65536)
            if not chunk:
                return data
            data += chunk
        raise OSError("the answer to %s %s is longer than %d bytes" % (method, path, MAX_ANSWER))
    finally:
        s.close()


def split_answer(data):
    """(status, head, body) of an answer fetch() returned: the status an int, None when `data` starts with
    no HTTP/1.x status line; head and body bytes, split at the first empty line."""
    head, _, body = data.partition(b"\r\n\r\n")
    parts = head.split(None, 2)
    status = int(parts[1]) if len(parts) > 1 and parts[0].startswith(b"HTTP/1.") and parts[1].isdigit() else None
    return status, head, body
