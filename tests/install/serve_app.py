#!/usr/bin/python3
"""Serves an app library with an installed `csgi serve --app` and checks its answers over a socket; checks
that the library exports no csgi symbol but its entry point. Usage: serve_app.py CSGI_EXE APP_SO"""
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from fetch import fetch, split_answer  # noqa: E402

CSGI, APP = sys.argv[1], sys.argv[2]
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def request(port, method, path, headers="", body=""):
    _, head, body = split_answer(fetch(port, path, method=method, headers=headers, body=body))
    return head.decode("latin-1"), body


exports = subprocess.run(["nm", "-D", "--defined-only", APP], capture_output=True, text=True).stdout
csgi_exports = [l.split()[-1] for l in exports.splitlines() if "csgi" in l]
check(sorted(csgi_exports) == ["csgi_app_v1", "csgi_log_files_v1"],
      "the app library exports only its entry points (csgi_app_v1, csgi_log_files_v1) of csgi's symbols: %s"
      % csgi_exports[:5])

p = subprocess.Popen([CSGI, "serve", "--app", APP, "--app-arg", "hello", "--listen", "127.0.0.1:0"],
                     stdout=subprocess.PIPE, text=True)
try:
    port = None
    for _ in range(20):
        line = p.stdout.readline()
        if not line:
            break
        m = re.search(r"listening on http://127\.0\.0\.1:(\d+)/", line)
        if m:
            port = int(m.group(1))
            break
    check(port is not None, "csgi serve --app listens")
    if port:
        head, body = request(port, "GET", "/greet/ada")
        check(head.startswith("HTTP/1.1 200") and "application/json" in head, "GET /greet/ada: 200 JSON")
        check(json.loads(body) == {"greeting": "hello", "name": "ada"}, "the route's parameter and --app-arg: %r" % body)
        head, _ = request(port, "POST", "/greet/ada", "Content-Length: 0\r\n")
        check(head.startswith("HTTP/1.1 405") and re.search(r"(?im)^Allow: GET, HEAD\r?$", head), "POST: 405 with Allow")
        doc = '{"a":[1,"\\u00e9"]}'
        head, body = request(port, "POST", "/echo", "Content-Type: application/json\r\nContent-Length: %d\r\n"
                             % len(doc.encode()), doc)
        check(head.startswith("HTTP/1.1 200") and json.loads(body) == {"a": [1, "\u00e9"]}, "POST /echo: the JSON back")
        head, body = request(port, "POST", "/echo", "Content-Type: application/json\r\nContent-Length: 2\r\n", "{x")
        check(head.startswith("HTTP/1.1 400") and b"malformed JSON" in body, "POST /echo malformed: 400 with the reason")
        head, _ = request(port, "POST", "/echo", "Content-Type: text/plain\r\nContent-Length: 2\r\n", "{}")
        check(head.startswith("HTTP/1.1 415"), "POST /echo as text/plain: 415")
        head, _ = request(port, "GET", "/nope")
        check(head.startswith("HTTP/1.1 404"), "an unrouted path: 404")
finally:
    p.terminate()
    try:
        p.wait(20)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
check(p.returncode == 0, "csgi serve exits 0 on SIGTERM")
sys.exit(1 if failures else 0)
