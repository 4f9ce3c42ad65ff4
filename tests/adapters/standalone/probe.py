"""What the standalone process tests (reload, upgrade, systemd) share: a pass/fail checklist and one
GET on a new connection."""
import socket

failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)
    return cond


def fetch(port, path="/hello", timeout=10):
    """GET `path` with Connection: close on a new connection; the whole answer, as bytes."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.sendall(("GET %s HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n" % path).encode())
    data = b""
    while True:
        d = s.recv(65536)
        if not d:
            break
        data += d
    s.close()
    return data


def get_ok(port, path="/hello"):
    """The body of a 200 answer to GET `path`; OSError for any other answer."""
    data = fetch(port, path)
    head, _, body = data.partition(b"\r\n\r\n")
    if not head.startswith(b"HTTP/1.1 200"):
        raise OSError("bad response: %r" % data[:200])
    return body.decode()
