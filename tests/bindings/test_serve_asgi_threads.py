"""A FastAPI `def` endpoint under `csgi serve --asgi`, counted rather than timed: the threads of the server
process and their context switches over sequential keep-alive requests (/proc/PID/task/*/status).

Per request the design wakes the io thread (the request, then the response to write), the event loop
(the request handed over, then the endpoint's result), and one of anyio's worker threads that stay for
the loop's life; a request that starts a thread of its own, or hands over more often, fails here."""
import http.client
import json
import os

import pytest

from conftest import HERE, free_port, voluntary_switches

pytest.importorskip("fastapi")

REQUESTS = 400
# Voluntary context switches per request, all threads of the server: io 1-2, loop 2, worker 1, and the GIL
# changing hands between the loop and the worker (1-2). Preemptions (nonvoluntary) follow the machine's
# load and are not counted.
SWITCHES_PER_REQUEST = 7.5


def threads_of(pid):
    return set(os.listdir("/proc/%d/task" % pid))


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
