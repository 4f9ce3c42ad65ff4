#!/usr/bin/python3
"""Other clients' latency while one client trickles a chunked upload (one byte a second) to an ASGI app
that reads its body: `csgi serve --asgi --threads 1` beside `python3 -m uvicorn`, one after the other. Each
server answers GETs on fresh connections for SECONDS while the upload is open; prints the median and the
worst latency (a GET not answered within 3 s counts as 3000 ms).
Usage: slow_upload_latency.py CSGI_EXE [SECONDS]   e.g. slow_upload_latency.py build/adapters/cli/csgi 6"""
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from fetch import fetch  # noqa: E402
from ports import free_port, wait_port  # noqa: E402

APP = '''
async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    body = b""
    if scope["path"] == "/upload":
        while True:
            m = await receive()
            body += m.get("body", b"")
            if not m.get("more_body"):
                break
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": b"got %d" % len(body)})
'''


def get(port):
    """Milliseconds to a whole 200 for GET /, or 3000 (the bound) when none came."""
    t0 = time.time()
    try:
        got = fetch(port, "/", timeout=3)
        return (time.time() - t0) * 1000 if got.startswith(b"HTTP/1.1 200") else 3000.0
    except OSError:
        return 3000.0


def measure(name, cmd, port, cwd, seconds):
    srv = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           env=dict(os.environ, PYTHONPATH=cwd))
    try:
        if not wait_port(port):
            print("%s: did not start" % name)
            return
        lat = []
        with socket.create_connection(("127.0.0.1", port)) as up:
            up.sendall(b"POST /upload HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n")
            end, last = time.time() + seconds, time.time()
            while time.time() < end:
                if time.time() - last >= 1:
                    up.sendall(b"1\r\nx\r\n")
                    last = time.time()
                lat.append(get(port))
                time.sleep(0.2)
        print("%-28s %3d GETs during the upload: median %6.1f ms, worst %6.1f ms"
              % (name, len(lat), statistics.median(lat), max(lat)))
    finally:
        srv.terminate()
        srv.wait(10)


def main():
    csgi = os.path.abspath(sys.argv[1])
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 6
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "slow_body_app.py"), "w") as f:
            f.write(APP)
        p = free_port()
        measure("csgi serve --asgi", [csgi, "serve", "--asgi", "slow_body_app:app", "--threads", "1",
                                      "--listen", "127.0.0.1:%d" % p], p, d, seconds)
        p = free_port()
        measure("uvicorn", ["/usr/bin/python3", "-m", "uvicorn", "slow_body_app:app", "--port", str(p),
                            "--log-level", "warning"], p, d, seconds)


if __name__ == "__main__":
    main()
