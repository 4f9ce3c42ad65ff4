"""A FastAPI app under `csgi serve --asgi`, counted rather than timed: the threads of the server process,
their scheduling policy and their context switches over sequential keep-alive requests
(/proc/PID/task/*/status).

Per request the design wakes the io thread (the request, then the response to write), the event loop
(the request handed over, then the endpoint's result), and for a `def` endpoint one of anyio's worker
threads that stay for the loop's life; a request that starts a thread of its own, or hands over more
often, fails here. With every thread of the server on one CPU, a woken thread must not preempt the one
that woke it (SCHED_BATCH, bindings/src/sched_policy.hpp): an `async def` request then blocks each of its
threads once per hand-off, three times in all."""
import http.client
import json
import os
import socket

import pytest

from conftest import HERE, free_port, voluntary_switches

pytest.importorskip("fastapi")

REQUESTS = 400
# Voluntary context switches per request, all threads of the server: io 1-2, loop 2, worker 1, and the GIL
# changing hands between the loop and the worker (1-2). Preemptions (nonvoluntary) follow the machine's
# load and are not counted.
SWITCHES_PER_REQUEST = 7.5
# An `async def` endpoint, the server on one CPU and bursts of requests on CONNECTIONS connections from
# another: the io thread queues a burst for the loop in one wake-up, the loop answers it in one or two
# passes, each posting its responses to the io thread in one go, so a request's share of the hand-offs is
# well under one switch (about 0.1). A woken thread that preempts the one that woke it (the io thread,
# woken by the loop's first post while the loop holds the io context's lock) makes it one or more.
CONNECTIONS = 32
BURSTS = 40
BURST_SWITCHES_PER_REQUEST = 0.4
SCHED_BATCH = 3


def threads_of(pid):
    return set(os.listdir("/proc/%d/task" % pid))


def policies(pid):
    """The scheduling policy of each thread of `pid` (/proc/PID/task/TID/sched)."""
    out = {}
    for tid in threads_of(pid):
        try:
            with open("/proc/%d/task/%s/sched" % (pid, tid)) as f:
                out[tid] = next(int(line.split(":")[1]) for line in f if line.startswith("policy"))
        except (OSError, StopIteration):  # a thread that ended meanwhile
            pass
    return out


def get_thread(conn):
    conn.request("GET", "/thread")
    r = conn.getresponse()
    body = r.read()
    assert r.status == 200, body
    return json.loads(body)["thread"]


def test_def_endpoint_reuses_its_worker_and_hands_over_a_bounded_number_of_times(server_factory, csgi_bin, tmp_path):
    port = free_port()
    server = server_factory([csgi_bin, "serve", "--asgi", "fastapi_site:app", "--listen", "127.0.0.1:%d" % port,
                             "--threads", "1"], port, cwd=HERE,
                            env={"ASGI_TEST_DIR": str(tmp_path), "CSGI_TEST_APPS": os.environ.get("CSGI_TEST_APPS", "")})
    pid = server.proc.pid  # csgi serve --asgi replaces itself with python3 (execv): the same pid
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    try:
        for _ in range(50):  # the pool's worker and the loop's lazily made state are in place after these
            get_thread(conn)
        before_threads, before = threads_of(pid), voluntary_switches(pid)
        ran_on = {get_thread(conn) for _ in range(REQUESTS)}
        after, after_threads = voluntary_switches(pid), threads_of(pid)
    finally:
        conn.close()
    assert len(ran_on) == 1, "the def endpoint ran on %d threads over %d sequential requests" % (len(ran_on), REQUESTS)
    assert after_threads == before_threads, "threads came or went while serving: %s" % (before_threads ^ after_threads)
    per_request = (after - before) / REQUESTS
    assert per_request <= SWITCHES_PER_REQUEST, "%.2f voluntary context switches per request" % per_request


def read_response(sock, buf):
    """One response to GET / from `sock` (with what `buf` held of it): the bytes after it."""
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(65536)
        assert chunk, "the connection closed"
        buf += chunk
    head, _, rest = buf.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 "), head
    length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:"))
    while len(rest) < length:
        chunk = sock.recv(65536)
        assert chunk, "the connection closed"
        rest += chunk
    assert rest[:length] == b'{"hello":"world"}'
    return rest[length:]


def test_async_endpoint_on_one_cpu_takes_bursts_without_preempting(server_factory, csgi_bin, tmp_path):
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        pytest.skip("needs two CPUs: the server on one, the client on another")
    port = free_port()
    server = server_factory(["taskset", "-c", str(cpus[0]), csgi_bin, "serve", "--asgi", "fastapi_site:app",
                             "--listen", "127.0.0.1:%d" % port, "--threads", "1"], port, cwd=HERE,
                            env={"ASGI_TEST_DIR": str(tmp_path), "CSGI_TEST_APPS": os.environ.get("CSGI_TEST_APPS", "")})
    pid = server.proc.pid  # taskset and csgi serve --asgi exec: the same pid
    request = b"GET / HTTP/1.1\r\nHost: t\r\n\r\n"
    socks, bufs = [], []
    os.sched_setaffinity(0, set(cpus[1:]))
    try:
        for _ in range(CONNECTIONS):
            socks.append(socket.create_connection(("127.0.0.1", port), timeout=20))
            bufs.append(b"")

        def burst():
            for s in socks:
                s.sendall(request)
            for i, s in enumerate(socks):
                bufs[i] = read_response(s, bufs[i])

        for _ in range(5):
            burst()
        before = voluntary_switches(pid)
        for _ in range(BURSTS):
            burst()
        after = voluntary_switches(pid)
        policy = policies(pid)
    finally:
        os.sched_setaffinity(0, set(cpus))
        for s in socks:
            s.close()
    per_request = (after - before) / (BURSTS * CONNECTIONS)
    assert per_request <= BURST_SWITCHES_PER_REQUEST, "%.2f voluntary context switches per request" % per_request
    assert set(policy.values()) == {SCHED_BATCH}, "scheduling policy by thread: %s" % policy
