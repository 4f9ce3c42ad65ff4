"""Streamed ASGI responses under `csgi serve --asgi`, counted rather than timed: the http.response.body
messages an app sends within one pass of the event loop reach the server as one write, so a response of
16 small chunks costs the threads of the server about as many context switches as a complete one; chunks
sent over several passes still arrive in order, streamed. A request body arrives whole."""
import hashlib
import http.client
import socket

import pytest

from conftest import HERE, free_port, voluntary_switches
from stream_site import BURSTS, CHUNKS

REQUESTS = 100
# Voluntary context switches per request, all threads of the server. /burst: the io thread (the request,
# the response), the loop (the request handed over); a wake-up per chunk would be 16 or more. /bursts
# (64 chunks over 5 passes): the head, each burst and the end in a write or two, each waking a pool
# thread, the io thread and the loop; a write per chunk would be about 250.
SWITCHES_PER_REQUEST = {"/burst": 6, "/bursts": 24}


def start(server_factory, csgi_bin, *extra):
    port = free_port()
    return server_factory([csgi_bin, "serve", "--asgi", "stream_site:app", "--listen", "127.0.0.1:%d" % port,
                           "--threads", "1", *extra], port, cwd=HERE)


def get(conn, path):
    conn.request("GET", path)
    r = conn.getresponse()
    body = r.read()
    assert r.status == 200, body
    return body


@pytest.mark.parametrize("path", ["/burst", "/bursts"])
def test_chunks_of_one_loop_pass_are_one_write(server_factory, csgi_bin, path):
    server = start(server_factory, csgi_bin)
    body = b"".join(CHUNKS) * (BURSTS if path == "/bursts" else 1)
    pid = server.proc.pid  # csgi serve --asgi replaces itself with python3 (execv): the same pid
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=20)
    try:
        for _ in range(20):
            assert get(conn, path) == body
        before = voluntary_switches(pid)
        for _ in range(REQUESTS):
            get(conn, path)
        after = voluntary_switches(pid)
    finally:
        conn.close()
    per_request = (after - before) / REQUESTS
    assert per_request <= SWITCHES_PER_REQUEST[path], "%.2f voluntary context switches per request" % per_request


def test_chunks_over_several_passes_are_streamed_in_order(server_factory, csgi_bin):
    server = start(server_factory, csgi_bin)
    with socket.create_connection(("127.0.0.1", server.port), timeout=20) as s:
        s.sendall(b"GET /paced HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        raw = b""
        for _ in range(1000):
            data = s.recv(65536)
            if not data:
                break
            raw += data
    head, _, body = raw.partition(b"\r\n\r\n")
    assert b"transfer-encoding: chunked" in head.lower(), head
    data = b""
    while body:
        size, _, rest = body.partition(b"\r\n")
        n = int(size, 16)
        if n == 0:
            break
        data += rest[:n]
        body = rest[n + 2:]
    assert data == b"".join(CHUNKS)


def test_request_body_by_length_and_chunked_arrives_whole(server_factory, csgi_bin):
    """The body in one http.request message, read into a buffer of its Content-Length (past the first
    allocation's 1 MiB here) or as it comes (chunked)."""
    server = start(server_factory, csgi_bin, "--max-body-bytes", "4000000")
    body = bytes(range(256)) * 12000  # 3 MB
    want = b"%d %s" % (len(body), hashlib.sha256(body).hexdigest().encode())
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=20)
    try:
        for chunked in (False, True):
            conn.request("POST", "/sha", body=iter([body[:1000], body[1000:]]) if chunked else body,
                         encode_chunked=chunked)
            r = conn.getresponse()
            assert (r.status, r.read()) == (200, want)
    finally:
        conn.close()
