#!/usr/bin/python3
"""Worker recycling and the request timeout of `csgi serve --workers N`, on real sockets:
  * --max-requests with --max-requests-jitter under load (wrk, and a bounded Python load loop that checks
    every response): 0 failed requests across many recycles, each recycle in the error log and in
    csgi_worker_restarts_total{cause="max_requests"}, each worker's limit within N…N+J; HTTP/2 requests
    count toward the limit as HTTP/1 ones do;
  * --max-worker-memory: a worker past the ceiling after a request is replaced (cause "memory");
  * --request-timeout: a sleeping request is answered 504 in about the timeout, a concurrent request is
    answered by the other worker, the error log has the app thread's stack, the worker pid changes; the
    same with --app-threads, where a fault on an app thread is contained to its request too;
  * without --workers the options are a usage error.
Usage: test_workers.py CSGI_EXE APP_SO"""
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from ports import stop_group  # noqa: E402
from fetch import fetch, split_answer  # noqa: E402

CSGI, APP = sys.argv[1], sys.argv[2]
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def start(*args):
    p = subprocess.Popen([CSGI, "serve", "--app", APP, "--listen", "127.0.0.1:0"] + list(args), stdout=subprocess.PIPE,
                         text=True, start_new_session=True)
    deadline = time.time() + 15
    while time.time() < deadline:
        line = p.stdout.readline()
        m = re.search(r"listening on http://127\.0\.0\.1:(\d+)/", line)
        if m:
            return p, int(m.group(1))
        if not line:
            break
    p.kill()
    raise SystemExit("server did not start")


def get(port, path, timeout=10):
    """One request on a new connection; returns (status, body) or (None, error)."""
    try:
        data = fetch(port, path, timeout=timeout)
    except OSError as e:
        return None, str(e)
    status, _, body = split_answer(data)
    if status is None:
        return None, repr(data[:60])
    return status, body.decode(errors="replace")


def resident_mib(pid):
    """The resident memory of process `pid` in MiB (0 when it cannot be read)."""
    try:
        with open("/proc/%s/status" % pid) as f:
            m = re.search(r"^VmRSS:\s+(\d+) kB", f.read(), re.M)
    except OSError:
        return 0
    return int(m.group(1)) // 1024 if m else 0


def metric(port, series):
    status, text = get(port, "/metrics")
    m = re.search(r"^" + re.escape(series) + r" (\S+)$", text or "", re.M)
    return float(m.group(1)) if status == 200 and m else None


def read(path):
    with open(path) as f:
        return f.read()


def load_loop(port, threads=8, per_thread=400):
    """Keep-alive clients, each sending `per_thread` requests and checking every response; a connection the
    server closes (Connection: close) is reopened. Returns (ok, failed, reasons)."""
    counts = {"ok": 0, "failed": 0}
    reasons = []
    lock = threading.Lock()

    def client():
        ok = failed = 0
        s = None
        buf = b""
        for _ in range(per_thread):
            try:
                if s is None:
                    s = socket.create_connection(("127.0.0.1", port), timeout=10)
                    buf = b""
                s.sendall(b"GET /hello HTTP/1.1\r\nHost: t\r\n\r\n")
                while b"\r\n\r\n" not in buf:
                    d = s.recv(65536)
                    if not d:
                        raise OSError("connection closed before a response")
                    buf += d
                head, _, rest = buf.partition(b"\r\n\r\n")
                length = int(re.search(rb"(?i)content-length: *(\d+)", head).group(1))
                while len(rest) < length:
                    d = s.recv(65536)
                    if not d:
                        raise OSError("connection closed in a body")
                    rest += d
                buf = rest[length:]
                if not head.startswith(b"HTTP/1.1 200") or rest[:length] != b"hello":
                    raise OSError("unexpected response " + repr(head[:40]))
                ok += 1
                if re.search(rb"(?i)connection: *close", head):
                    s.close()
                    s = None
            except (OSError, AttributeError) as e:
                failed += 1
                with lock:
                    reasons.append(str(e))
                if s:
                    s.close()
                s = None
        if s:
            s.close()
        with lock:
            counts["ok"] += ok
            counts["failed"] += failed

    ts = [threading.Thread(target=client) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(120)
    return counts["ok"], counts["failed"], reasons[:5]


tmp = tempfile.mkdtemp()
try:
    # Without --workers: usage errors that say why.
    for opt in (["--max-requests", "10"], ["--max-worker-memory", "100"], ["--request-timeout", "5"]):
        r = subprocess.run([CSGI, "serve", "--app", APP] + opt, capture_output=True, text=True, timeout=30)
        check(r.returncode == 2 and (opt[0] + " needs --workers") in r.stderr,
              "%s without --workers is a usage error (exit %d: %s)" % (opt[0], r.returncode, r.stderr.strip()[:80]))

    # Recycling under load: wrk, then the Python loop; 0 failures, many recycles.
    err = os.path.join(tmp, "recycle.log")
    p, port = start("--workers", "2", "--max-requests", "100", "--max-requests-jitter", "20", "--metrics",
                    "--error-log", err)
    try:
        if shutil.which("wrk"):
            out = subprocess.run(["wrk", "-t2", "-c16", "-d3s", "http://127.0.0.1:%d/hello" % port], capture_output=True,
                                 text=True, timeout=60).stdout
            done = re.search(r"(\d+) requests in", out)
            print(out)
            check(done and int(done.group(1)) > 1000, "wrk ran requests through recycling workers")
            check("Socket errors" not in out and "Non-2xx" not in out, "wrk: 0 socket errors, 0 non-2xx responses")
        else:
            print("skip wrk: not installed")
        ok, failed, why = load_loop(port)
        print("python load loop: %d ok, %d failed %s" % (ok, failed, why))
        check(ok == 8 * 400 and failed == 0, "a Python load loop of 3200 keep-alive requests: every one answered 200")
        for _ in range(100):  # the last recycled workers finish draining
            workers = metric(port, "csgi_workers")
            if workers == 2:
                break
            time.sleep(0.1)
        restarts = metric(port, 'csgi_worker_restarts_total{cause="max_requests"}')
    finally:
        stop_group(p, 20)
    log = read(err)
    limits = [int(x) for x in re.findall(r"answered \d+ requests \(--max-requests: its limit is (\d+)\)", log)]
    exited = len(re.findall(r"exited \(recycled: max_requests\)", log))
    print("recycles: %d announced, %d exited, metrics %s, limits %s…" % (len(limits), exited, restarts, limits[:8]))
    check(len(limits) >= 20, "many workers recycled (%d)" % len(limits))
    check(all(100 <= n <= 120 for n in limits), "every worker's limit is within --max-requests … + jitter")
    check(len(set(limits)) > 1, "the jitter gives workers different limits")
    check(exited >= len(limits) - 2, "each recycled worker's exit is logged by the master (%d of %d)" % (exited, len(limits)))
    check(restarts is not None and restarts >= len(limits) - 2,
          'csgi_worker_restarts_total{cause="max_requests"} counts the recycles (%s)' % restarts)
    check(workers == 2, "after the load only the 2 current workers are left (%s)" % workers)
    check("died" not in log, "no worker died while recycling")

    # Requests over HTTP/2 count toward --max-requests as HTTP/1 ones do: 12 h2c requests (prior knowledge,
    # one connection each) through a worker whose limit is 10 recycle it.
    err = os.path.join(tmp, "recycle-h2.log")
    p, port = start("--workers", "1", "--max-requests", "10", "--error-log", err)
    try:
        answered = 0
        for _ in range(12):
            r = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code} %{http_version}",
                                "--http2-prior-knowledge", "http://127.0.0.1:%d/hello" % port],
                               capture_output=True, text=True, timeout=20)
            answered += r.stdout == "200 2"
        for _ in range(100):
            if "exited (recycled: max_requests)" in read(err):
                break
            time.sleep(0.1)
    finally:
        stop_group(p, 20)
    log = read(err)
    check(answered == 12, "12 HTTP/2 requests answered over h2c (%d)" % answered)
    check(re.search(r"answered \d+ requests \(--max-requests: its limit is 10\)", log) is not None,
          "HTTP/2 requests count toward --max-requests: the worker is recycled")

    # Memory ceiling: 64 MiB above what a worker holds once it has served a request (a sanitizer build
    # starts near 64 MiB); /grow?100 pushes the worker past it; it is replaced (cause "memory").
    p, port = start("--workers", "1")
    try:
        ceiling = 64 + resident_mib(get(port, "/pid")[1])
    finally:
        stop_group(p, 20)
    err = os.path.join(tmp, "memory.log")
    p, port = start("--workers", "1", "--max-worker-memory", str(ceiling), "--metrics", "--error-log", err)
    try:
        before = get(port, "/pid")[1]
        grown = get(port, "/grow?100")
        check(grown == (200, before), "the request that grows the worker is answered by it")
        after = None
        for _ in range(50):
            status, after = get(port, "/pid")
            if status == 200 and after != before:
                break
            time.sleep(0.1)
        check(status == 200 and after != before, "the worker past --max-worker-memory is replaced (%s → %s)" % (before, after))
        check(metric(port, 'csgi_worker_restarts_total{cause="memory"}') == 1, 'csgi_worker_restarts_total{cause="memory"} is 1')
    finally:
        stop_group(p, 20)
    log = read(err)
    check(re.search(r"worker %s uses \d+ MiB of resident memory \(--max-worker-memory %d MiB\)" % (before, ceiling), log) is not None,
          "the error log says which worker went over the memory ceiling")

    # Request timeout: 504 in about 1 s, the other worker answers meanwhile, the stack is logged, the pid changes.
    err = os.path.join(tmp, "timeout.log")
    p, port = start("--workers", "2", "--request-timeout", "1", "--metrics", "--error-log", err)
    try:
        result = {}

        def slow():
            t0 = time.time()
            result["answer"] = get(port, "/sleep?10", timeout=15)
            result["took"] = time.time() - t0

        t = threading.Thread(target=slow)
        t.start()
        time.sleep(0.3)
        during = [get(port, "/pid", timeout=5) for _ in range(5)]
        t.join(20)
        check(result.get("answer", (None,))[0] == 504, "the request running past --request-timeout is answered 504 (%r)" % (result.get("answer"),))
        check(0.9 <= result.get("took", 0) <= 3, "the 504 comes in about the timeout (%.2f s)" % result.get("took", 0))
        m = None
        for _ in range(100):  # the client may see its 504 a moment before the line is written
            m = re.search(r"csgi: worker (\d+): the app ran longer than --request-timeout \(1 s\) on io thread 0 while "
                          r"serving \"GET /sleep\?10\"; that request was answered 504", read(err))
            if m:
                break
            time.sleep(0.02)
        check(m is not None, "the error log names the worker, the request and the timeout")
        stuck = m.group(1) if m else "?"
        check(all(s == 200 and pid != stuck for s, pid in during),
              "requests made meanwhile are answered by the other worker (%r; timed out: %s)" % (during, stuck))
        gone = False
        for _ in range(100):  # the timed-out worker drains, exits and is reaped
            try:
                os.kill(int(stuck), 0)
            except (ProcessLookupError, ValueError):
                gone = True
                break
            time.sleep(0.05)
        check(gone, "the timed-out worker %s is gone" % stuck)
        workers = None
        for _ in range(50):
            workers = metric(port, "csgi_workers")
            if workers == 2:
                break
            time.sleep(0.05)
        check(workers == 2, "a new worker replaced it: 2 workers (%s)" % workers)
        later = {get(port, "/pid")[1] for _ in range(20)}
        check(stuck not in later, "the worker pid changed: %s no longer answers (%s)" % (stuck, sorted(later)))
        check(metric(port, 'csgi_worker_restarts_total{cause="timeout"}') == 1, 'csgi_worker_restarts_total{cause="timeout"} is 1')
        check(metric(port, "csgi_http_requests_in_flight") == 1,
              "the timed-out request left no count in csgi_http_requests_in_flight (the scrape alone: %s)"
              % metric(port, "csgi_http_requests_in_flight"))
    finally:
        stop_group(p, 20)
    log = read(err)
    check("the app thread's stack:" in log and "process_app_sleep" in log, "the error log has the app thread's stack, symbolised")
    check(re.search(r"worker %s exited after a request timeout" % stuck, log) is not None,
          "the timed-out worker exits once it has drained")

    # With --app-threads the app runs on a pool thread: a timeout there is a 504 too, and a fault a 500;
    # each time the worker is replaced.
    err = os.path.join(tmp, "pool.log")
    p, port = start("--workers", "1", "--app-threads", "2", "--request-timeout", "1", "--error-log", err)
    try:
        first = get(port, "/pid")[1]
        t0 = time.time()
        answer = get(port, "/sleep?10", timeout=15)
        took = time.time() - t0
        check(answer[0] == 504 and 0.9 <= took <= 3, "on an app thread: 504 in about the timeout (%r, %.2f s)" % (answer, took))
        second = None
        for _ in range(100):
            # While a worker is replaced a connection may be reset: only an answer names a worker.
            status, second = get(port, "/pid")
            if status == 200 and second != first:
                break
            time.sleep(0.05)
        check(second != first, "on an app thread: the timed-out worker is replaced (%s → %s)" % (first, second))
        check(get(port, "/crash")[0] == 500, "a fault on an app thread is contained to its request: 500")
        third = None
        for _ in range(100):
            status, third = get(port, "/pid")
            if status == 200 and third not in (first, second):
                break
            time.sleep(0.05)
        check(third not in (first, second), "the worker that faulted on an app thread is replaced (%s → %s)" % (second, third))
    finally:
        stop_group(p, 20)
    log = read(err)
    check(re.search(r"worker %s: the app ran longer than --request-timeout \(1 s\) on app thread \d" % first, log) is not None
          and "process_app_sleep" in log, "the log names the app thread and has its stack")
    check(re.search(r"worker %s: SIGSEGV \(invalid memory access\) in the app on app thread \d" % second, log) is not None,
          "the log names the fault on the app thread")
finally:
    shutil.rmtree(tmp, ignore_errors=True)

print("%d failure(s)" % len(failures))
sys.exit(1 if failures else 0)
