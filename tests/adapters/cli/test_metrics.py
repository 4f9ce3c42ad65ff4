#!/usr/bin/python3
"""`csgi serve --metrics --workers 2`, on real sockets:
  * new connections go to whichever worker accepts them; scrapes are repeated until both workers have
    answered one, and every scrape shows the sum over both (the counters are shared memory);
  * the exposition passes `promtool check metrics` (Debian's prometheus package);
  * a real Prometheus server scrapes it (`up` is 1 and csgi_http_requests_total is stored);
  * the worker gauges (workers, restarts by cause, open and idle connections, app executor, accept queue)
    are summed over both workers.
  * scrapes forwarded by a proxy on the same host are refused; --metrics-token-file requires a bearer token.
Without promtool/prometheus those two checks are skipped with a message (exit 0 if the rest passed).
Usage: test_metrics.py CSGI_EXE"""
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

CSGI = sys.argv[1]
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serving import check, failures, free_port, start as start_csgi  # noqa: E402
from fetch import fetch, split_answer  # noqa: E402  (serving.py puts tests/ on sys.path)


def start(args):
    return start_csgi(CSGI, args)


def get(port, path, extra=""):
    """One request on a new connection (Connection: close), with `extra` header lines; returns (status, body)."""
    status, _, body = split_answer(fetch(port, path, headers=extra))
    return status, body.decode()


def value(text, series):
    m = re.search(r"^" + re.escape(series) + r" (\S+)$", text, re.M)
    return float(m.group(1)) if m else None


def sum_over_workers(port):
    hello = 40
    for _ in range(hello):
        check_status = get(port, "/hello")[0]
        if check_status != 200:
            check(False, "GET /hello answers 200")
            return None
    # Scrape on new connections until both workers have answered one (bounded).
    scrapes, seen, last, last_pid = 0, {}, None, None
    for _ in range(400):
        status, text = get(port, "/metrics")
        scrapes += 1
        if status != 200:
            check(False, "GET /metrics answers 200 (got %d)" % status)
            return None
        pid = re.search(r'^csgi_worker_connections_total\{pid="(\d+)"\} (\d+)$', text, re.M)
        get_2xx = value(text, 'csgi_http_requests_total{method="GET",code="2xx"}')
        # Every /hello and every earlier scrape, whichever worker answered it.
        check(get_2xx == hello + scrapes - 1,
              "scrape %d (pid %s) counts all %d requests so far (got %s)" % (scrapes, pid and pid.group(1),
                                                                             hello + scrapes - 1, get_2xx))
        own = seen.setdefault(pid.group(1), [0, 0])
        own[0] += 1
        own[1] = int(pid.group(2))
        last, last_pid = text, pid.group(1)
        if len(seen) == 2:
            break
    check(len(seen) == 2, "both workers answered a scrape")
    # Which worker accepts a new connection is the kernel's choice, so one of them may have served every
    # /hello. The worker that answered the last scrape had accepted fewer connections than the scrape
    # counted: the rest were served by the other worker and reached it through the shared counters.
    own_conns = seen[last_pid][1]
    check(own_conns - 1 < hello + scrapes - 1,
          "the last scrape (pid %s) counted %d requests, %d of them served by the other worker"
          % (last_pid, hello + scrapes - 1, hello + scrapes - own_conns))
    check(value(last, "csgi_http_request_duration_seconds_count") == hello + scrapes - 1,
          "the duration histogram counts every request")
    return last


def worker_gauges(port):
    """The WorkerBoard's sums: workers, restarts by cause, open and idle keep-alive connections (three
    connections left idle after one request each, whichever worker holds them), the app executor's gauges
    and the listening socket's accept queue."""
    idle = []
    for _ in range(3):
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.sendall(b"GET /hello HTTP/1.1\r\nHost: t\r\n\r\n")
        data = b""
        while b"Hello, world!" not in data:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
        idle.append(s)
    try:
        text = None
        for _ in range(50):  # an idle connection is counted once its worker waits for its next request
            text = get(port, "/metrics")[1]
            if value(text, "csgi_connections_idle") == 3:
                break
            time.sleep(0.05)
        check(value(text, "csgi_workers") == 2, "csgi_workers is 2 (%s)" % value(text, "csgi_workers"))
        for cause in ("crash", "timeout", "max_requests", "memory"):
            check(value(text, 'csgi_worker_restarts_total{cause="%s"}' % cause) == 0, "no restarts by %s yet" % cause)
        check(value(text, "csgi_connections_idle") == 3, "3 idle keep-alive connections over both workers (%s)"
              % value(text, "csgi_connections_idle"))
        check(value(text, "csgi_connections_open") == 4, "4 open connections: the idle ones and the scrape's (%s)"
              % value(text, "csgi_connections_open"))
        check(value(text, "csgi_app_queue_length") == 0 and value(text, "csgi_app_threads_busy") == 0,
              "the app executor's gauges are there (no --app-threads: 0)")
        check(value(text, 'csgi_listen_queue_limit{listener="127.0.0.1:%d"}' % port) == 4096,
              "the accept queue's limit of the listening socket (4096)")
        check(value(text, 'csgi_listen_queue_length{listener="127.0.0.1:%d"}' % port) is not None,
              "the accept queue's length of the listening socket")
    finally:
        for s in idle:
            s.close()
    for _ in range(50):
        text = get(port, "/metrics")[1]
        if value(text, "csgi_connections_idle") == 0:
            break
        time.sleep(0.05)
    check(value(text, "csgi_connections_idle") == 0 and value(text, "csgi_connections_open") == 1,
          "closed connections leave the gauges (idle %s, open %s)" % (value(text, "csgi_connections_idle"),
                                                                      value(text, "csgi_connections_open")))
    return text


def promtool(text):
    if not shutil.which("promtool"):
        print("SKIP promtool check metrics: promtool not installed (Debian package prometheus)")
        return
    r = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True, timeout=30)
    check(r.returncode == 0 and not r.stdout.strip() and not r.stderr.strip(),
          "promtool check metrics passes: %s %s" % (r.stdout, r.stderr))


def prometheus_scrape(port):
    if not shutil.which("prometheus"):
        print("SKIP prometheus scrape: prometheus not installed (Debian package prometheus)")
        return
    with tempfile.TemporaryDirectory() as tmp:
        config = os.path.join(tmp, "prometheus.yml")
        with open(config, "w") as f:
            f.write("global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: csgi\n"
                    "    static_configs:\n      - targets: ['127.0.0.1:%d']\n" % port)
        web = free_port()
        p = subprocess.Popen(["prometheus", "--config.file", config, "--storage.tsdb.path", os.path.join(tmp, "data"),
                              "--web.listen-address", "127.0.0.1:%d" % web],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            up = stored = None
            deadline = time.time() + 60
            while time.time() < deadline and not (up == "1" and stored):
                time.sleep(1)
                try:
                    q = "http://127.0.0.1:%d/api/v1/query?query=" % web
                    r = json.load(urllib.request.urlopen(q + "up", timeout=5))["data"]["result"]
                    up = r[0]["value"][1] if r else None
                    r = json.load(urllib.request.urlopen(q + "csgi_http_requests_total", timeout=5))["data"]["result"]
                    stored = any(s["metric"].get("method") == "GET" and float(s["value"][1]) > 0 for s in r)
                except (OSError, ValueError, KeyError):
                    pass
            check(up == "1", "Prometheus scrapes csgi (up == 1)")
            check(bool(stored), "Prometheus stored csgi_http_requests_total{method=\"GET\"}")
        finally:
            stop(p)


def stop(p):
    p.terminate()
    try:
        p.wait(timeout=20)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()


def access_rules():
    """A reverse proxy on the same host connects from loopback: its forwarded requests are refused unless a
    --metrics-token-file token comes with them; with a token, every scrape needs it."""
    p, port = start(["--metrics", "--demo"])
    try:
        check(get(port, "/metrics")[0] == 200, "a loopback client scrapes")
        for header in ("X-Forwarded-For: 203.0.113.9", "Forwarded: for=203.0.113.9", "X-Real-IP: 203.0.113.9"):
            status = get(port, "/metrics", header + "\r\n")[0]
            check(status == 403, "a request forwarded by a local proxy (%s) may not scrape: %d" % (header, status))
        check(get(port, "/", "X-Forwarded-For: 203.0.113.9\r\n")[0] == 200, "forwarded requests reach the app")
    finally:
        stop(p)
    work = tempfile.mkdtemp(prefix="csgi-metrics-")
    token_file = os.path.join(work, "token")
    with open(token_file, "w") as f:
        f.write("  Zm9vYmFyYmF6-token\n")
    p, port = start(["--metrics", "--metrics-token-file", token_file, "--demo"])
    try:
        check(get(port, "/metrics")[0] == 401, "with --metrics-token-file a scrape without the token gets 401")
        check(get(port, "/metrics", "Authorization: Bearer wrong\r\n")[0] == 401, "a wrong token gets 401")
        status, text = get(port, "/metrics", "Authorization: Bearer Zm9vYmFyYmF6-token\r\nX-Forwarded-For: 1.2.3.4\r\n")
        check(status == 200 and "csgi_http_requests_total" in text, "the token scrapes, through a proxy too: %d" % status)
    finally:
        stop(p)
    r = subprocess.run([CSGI, "serve", "--demo", "--metrics-token-file", token_file], capture_output=True, text=True,
                       timeout=30)
    check(r.returncode == 2 and "applies with --metrics" in r.stderr, "--metrics-token-file alone: %r" % r.stderr)
    r = subprocess.run([CSGI, "serve", "--demo", "--metrics", "--metrics-token-file", os.path.join(work, "none"),
                        "--listen", "127.0.0.1:0"], capture_output=True, text=True, timeout=30)
    check(r.returncode == 1 and "--metrics-token-file" in r.stderr, "a missing token file: %r" % r.stderr.strip())


def main():
    access_rules()
    p, port = start(["--metrics", "--demo", "--workers", "2"])
    try:
        text = sum_over_workers(port)
        if text is not None:
            promtool(text)
            promtool(worker_gauges(port))
            prometheus_scrape(port)
    finally:
        stop(p)
    if failures:
        print("%d check(s) failed" % len(failures))
        sys.exit(1)
    print("all checks passed")


main()
