#!/usr/bin/python3
"""Instructions per request of gunicorn's sync worker for a C++ hello (csgi.App) and a pure-Python hello,
counted by callgrind without the accept loop: each request goes through SyncWorker.handle() over a
socketpair (parse, environ, app call, start_response, response), so the counts do not depend on timing
or load. For each app the worker handles N1 and then N2 requests in two processes; the figure is the
difference / (N2 - N1). Usage (PYTHONPATH: the built csgi package, CSGI_TEST_APPS: libcsgi_pytest_apps.so):
  gunicorn_call_cost.py [N1] [N2]
Run by itself as `gunicorn_call_cost.py --drive MODULE:APP N`, it only serves the N requests."""
import os
import re
import subprocess
import sys
import tempfile

APPS = {
    "cxxhello": "import os, csgi\napplication = csgi.load_app(os.environ['CSGI_TEST_APPS'], ['hello'])\n",
    "pyhello": "def application(environ, start_response):\n"
               "    start_response('200 OK', [('Content-Type', 'text/plain; charset=utf-8'), ('Content-Length', '13')])\n"
               "    return [b'Hello, World!']\n",
}


def drive(spec, n):
    import importlib
    import socket
    from gunicorn.config import Config
    from gunicorn.glogging import Logger
    from gunicorn.workers.sync import SyncWorker

    mod, name = spec.split(":")
    cfg = Config()
    worker = SyncWorker(0, os.getpid(), [], None, 30, cfg, Logger(cfg))
    worker.wsgi = getattr(importlib.import_module(mod), name)
    worker.alive = True
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    request = b"GET / HTTP/1.0\r\nHost: 127.0.0.1\r\nUser-Agent: ApacheBench/2.3\r\nAccept: */*\r\n\r\n"
    reply = b""
    for _ in range(n):
        a, b = socket.socketpair()
        b.sendall(request)
        worker.handle(listener, a, ("127.0.0.1", 40000))
        reply = b.recv(65536)
        b.close()
    assert reply.startswith(b"HTTP/1.0 200") and reply.endswith(b"Hello, World!"), reply


def count(workdir, app, n):
    env = dict(os.environ, PYTHONHASHSEED="0",
               PYTHONPATH=workdir + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = os.path.join(workdir, "cg.out")
    r = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out, sys.executable,
                        os.path.abspath(__file__), "--drive", app + ":application", str(n)],
                       env=env, capture_output=True, text=True, check=True)
    return int(re.search(r"refs:\s+([\d,]+)", r.stderr).group(1).replace(",", ""))


def main():
    if sys.argv[1:2] == ["--drive"]:
        drive(sys.argv[2], int(sys.argv[3]))
        return
    n1 = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    n2 = int(sys.argv[2]) if len(sys.argv) > 2 else 1200
    with tempfile.TemporaryDirectory() as work:
        for app, source in APPS.items():
            with open(os.path.join(work, app + ".py"), "w") as f:
                f.write(source)
        per = {}
        for app in APPS:
            a, b = count(work, app, n1), count(work, app, n2)
            per[app] = (b - a) / (n2 - n1)
            print("%s: %.0f instructions/request (%d requests: %d, %d: %d)" % (app, per[app], n1, a, n2, b))
        print("cxxhello / pyhello: %.3f" % (per["cxxhello"] / per["pyhello"]))


if __name__ == "__main__":
    main()
