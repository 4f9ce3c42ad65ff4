#!/usr/bin/python3
"""`csgi serve --health` and `--access-log-format json`, on real sockets:
  * /readyz and /livez answer 200 before the app (the demo app has neither path);
  * after SIGTERM, a kept-alive connection's next /readyz answers 503 "draining" (with Connection: close)
    while the server finishes, and the process then exits 0;
  * every access log line is one JSON object with nginx's field names, for HTTP and for CGI (where the
    access_log middleware writes it; the HTTP server's own log only knows "combined").
Usage: test_health_log.py CSGI_EXE"""
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time

CSGI = sys.argv[1]
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serving import check, exchange, failures, start as start_csgi  # noqa: E402


def start(args):
    return start_csgi(CSGI, args)


def request(sock, path):
    return exchange(sock, path, extra="User-Agent: probe/1\r\n")


with tempfile.TemporaryDirectory() as tmp:
    log = os.path.join(tmp, "access.json")
    p, port = start(["--health", "--demo", "--access-log", log, "--access-log-format", "json"])
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        status, _, body = request(s, "/readyz")
        check(status == 200 and body == "ready\n", "/readyz: 200 ready (%d %r)" % (status, body))
        status, _, body = request(s, "/livez")
        check(status == 200 and body == "alive\n", "/livez: 200 alive")
        status, _, body = request(s, "/hello")
        check(status == 200 and body == "Hello, world!", "the app behind the checks answers")
        p.send_signal(signal.SIGTERM)
        time.sleep(0.5)
        status, head, body = request(s, "/readyz")
        check(status == 503 and body == "draining\n", "after SIGTERM: /readyz 503 draining (%d %r)" % (status, body))
        check("connection: close" in head.lower(), "and the connection is closed after it")
        s.close()
        check(p.wait(timeout=20) == 0, "the server then exits 0")
    finally:
        if p.poll() is None:
            p.kill()
    lines = open(log).read().splitlines()
    check(len(lines) == 4, "one line per request: %d" % len(lines))
    parsed = [json.loads(l) for l in lines]
    check([j["request_uri"] for j in parsed] == ["/readyz", "/livez", "/hello", "/readyz"], "the requests in order")
    check([j["status"] for j in parsed] == [200, 200, 200, 503], "their statuses, as numbers")
    check(all(j["http_user_agent"] == "probe/1" and j["request_method"] == "GET" for j in parsed), "nginx's field names")

    # CGI: one request per process; the access_log middleware writes the line.
    cgi_log = os.path.join(tmp, "cgi.json")
    env = dict(os.environ, GATEWAY_INTERFACE="CGI/1.1", REQUEST_METHOD="GET", SCRIPT_NAME="", PATH_INFO="/hello",
               QUERY_STRING="", REQUEST_URI="/hello", SERVER_NAME="localhost", SERVER_PORT="80", SERVER_PROTOCOL="HTTP/1.1",
               REMOTE_ADDR="192.0.2.7", HTTP_USER_AGENT="cgi-probe")
    r = subprocess.run([CSGI, "serve", "--demo", "--cgi", "--access-log", cgi_log, "--access-log-format", "json"],
                       capture_output=True, env=env, timeout=30, stdin=subprocess.DEVNULL)
    check(r.returncode == 0 and b"Hello, world!" in r.stdout, "CGI answers")
    j = json.loads(open(cgi_log).read().splitlines()[0])
    check(j["remote_addr"] == "192.0.2.7" and j["request_uri"] == "/hello" and j["status"] == 200 and j["body_bytes_sent"] == 13,
          "CGI: a JSON line with the client and the bytes: %s" % j)
    r = subprocess.run([CSGI, "serve", "--demo", "--cgi", "--access-log", "-"], capture_output=True, text=True,
                       env=env, timeout=30, stdin=subprocess.DEVNULL)
    check(r.returncode == 2 and "standard output is the response" in r.stderr, "CGI refuses --access-log -")

print("%d failures" % len(failures))
sys.exit(1 if failures else 0)
