#!/usr/bin/python3
"""Whole-process tests of `csgi serve`: prefork workers (a crash in the app is contained to its request, the
worker replaced; without workers it still ends the process), SIGHUP restarts
workers with zero failed requests, SIGTERM exits 0, SIGUSR1 reopens the access log, systemd LISTEN_FDS,
IPv6 and unix listeners, --help, the app pool in workers. Usage: test_process.py CSGI_EXE APP_SO"""
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from fetch import fetch  # noqa: E402

CSGI, APP = sys.argv[1], sys.argv[2]
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def start(*args, env=None, pass_fds=(), preexec=None):
    p = subprocess.Popen([CSGI, "serve", "--app", APP] + list(args), stdout=subprocess.PIPE, text=True,
                         env=env, pass_fds=pass_fds, start_new_session=True)
    urls = []
    deadline = time.time() + 15
    while time.time() < deadline:
        line = p.stdout.readline()
        if not line:
            break
        m = re.search(r"listening on (\S+)", line)
        if m:
            urls.append(m.group(1))
            break
    if not urls:
        p.kill()
        raise SystemExit("server did not start")
    return p, urls[0]


def get(url, path="/hello", timeout=5):
    m = re.match(r"http://\[?([^\]]+?)\]?:(\d+)/", url)
    return fetch(int(m.group(2)), path, host=m.group(1), timeout=timeout)


def stop(p, sig=signal.SIGTERM, wait=20):
    os.killpg(p.pid, sig)
    try:
        return p.wait(wait)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        return None


# --help reads like a manual
out = subprocess.run([CSGI, "--help"], capture_output=True, text=True)
check(out.returncode == 0 and all(s in out.stdout for s in ("NAME", "SYNOPSIS", "MODES", "OPTIONS", "SIGNALS", "--listen")),
      "csgi --help prints the manual")
bad = subprocess.run([CSGI, "serve", "--app", APP, "--threads", "0"], capture_output=True, text=True)
check(bad.returncode == 2 and "threads" in bad.stderr, "a bad option exits 2 with a reason")
missing = subprocess.run([CSGI, "serve", "--app", "/nonexistent/lib.so", "--listen", "127.0.0.1:0"], capture_output=True, text=True)
check(missing.returncode == 1 and "cannot load" in missing.stderr, "an app that cannot load exits 1 with the reason")

# Workers: a crash kills one worker; the master replaces it and the service keeps answering.
p, url = start("--listen", "127.0.0.1:0", "--workers", "2")
check(get(url).endswith(b"hello"), "workers answer")
try:
    get(url, "/crash")
except OSError:
    pass
ok = 0
for _ in range(50):
    try:
        ok += get(url).endswith(b"hello")
    except OSError:
        pass
check(ok == 50, "after a worker crash every one of 50 requests is answered (%d)" % ok)

# Crash containment: a fault in one request's app code fails that request only. With one worker of one
# io thread, six slow requests wait on connections the worker has accepted while /crash faults; all six
# are answered 200 (the rescue thread runs the frozen thread's connections), the crash gets a 500 (or a
# closed connection), the master starts a new worker, and the error log names the signal and request.
def http_on(sock, path):
    """The answer to GET `path` on an open connection; b"" when the connection fails."""
    try:
        return fetch(None, path, timeout=30, sock=sock)
    except OSError:
        return b""


with tempfile.TemporaryDirectory() as d:
    errlog = os.path.join(d, "errors.log")
    p2, url2 = start("--listen", "127.0.0.1:0", "--workers", "1", "--threads", "1", "--error-log", errlog)
    port2 = int(url2.rsplit(":", 1)[1].strip("/"))
    first_pid = get(url2, "/pid").split(b"\r\n\r\n")[1]
    conns = [socket.create_connection(("127.0.0.1", port2), timeout=10) for _ in range(7)]
    time.sleep(0.3)  # the worker accepts them all while idle
    results = {}
    slow = [threading.Thread(target=lambda i=i: results.__setitem__(i, http_on(conns[i], "/slow"))) for i in range(6)]
    for t in slow:
        t.start()
    time.sleep(0.05)
    crash_answer = http_on(conns[6], "/crash")
    for t in slow:
        t.join()
    answered = sum(1 for r in results.values() if r.startswith(b"HTTP/1.1 200") and r.endswith(b"hello"))
    check(answered == 6, "a crash in one request: the 6 slow requests in flight on the same worker thread are answered (%d)" % answered)
    check(crash_answer.startswith(b"HTTP/1.1 500") or crash_answer == b"",
          "the crashing request gets a 500 or a closed connection (%r)" % crash_answer[:30])
    new_pid = None
    for _ in range(50):
        try:
            new_pid = get(url2, "/pid").split(b"\r\n\r\n")[1]
            if new_pid != first_pid:
                break
        except OSError:
            pass
        time.sleep(0.1)
    check(new_pid is not None and new_pid != first_pid, "the master replaced the worker (%r -> %r)" % (first_pid, new_pid))
    time.sleep(0.5)
    text = open(errlog).read()
    check("SIGSEGV" in text and "GET /crash" in text, "the error log names the signal and the request")
    check("exited after containing a fault" in text, "the faulted worker exited after its drain")
    check(stop(p2) == 0, "the master exits 0 after a contained fault")

# Without --workers there is no master: a fault still ends the process (nothing continues silently).
p3, url3 = start("--listen", "127.0.0.1:0")
try:
    get(url3, "/crash")
except OSError:
    pass
try:
    rc3 = p3.wait(10)
except subprocess.TimeoutExpired:
    rc3 = None
    stop(p3, signal.SIGKILL)
check(rc3 == -signal.SIGSEGV, "single process: a fault in the app ends the process with SIGSEGV (%r)" % rc3)

# SIGHUP under load: zero failed requests, and new worker pids serve afterwards.
before = {get(url, "/pid").split(b"\r\n\r\n")[1] for _ in range(20)}
errors, done = [], threading.Event()
count = [0]


def load():
    while not done.is_set():
        try:
            r = get(url, "/slow" if count[0] % 5 == 0 else "/hello")
            if not r.startswith(b"HTTP/1.1 200"):
                errors.append(r[:40])
        except OSError as e:
            errors.append(str(e))
        count[0] += 1


threads = [threading.Thread(target=load) for _ in range(4)]
for t in threads:
    t.start()
time.sleep(0.5)
os.kill(p.pid, signal.SIGHUP)
time.sleep(1.5)
done.set()
for t in threads:
    t.join()
after = {get(url, "/pid").split(b"\r\n\r\n")[1] for _ in range(20)}
check(not errors and count[0] > 20, "SIGHUP restart under load: %d requests, %d failed %s" % (count[0], len(errors), errors[:3]))
check(not (before & after), "after SIGHUP other worker processes serve")
rc = stop(p)
check(rc == 0, "SIGTERM: master and workers exit 0 (got %r)" % rc)

# SIGUSR1 reopens the access log (logrotate).
with tempfile.TemporaryDirectory() as d:
    log = os.path.join(d, "access.log")
    p, url = start("--listen", "127.0.0.1:0", "--access-log", log)
    get(url)
    os.rename(log, log + ".1")
    os.kill(p.pid, signal.SIGUSR1)
    time.sleep(0.3)
    get(url, "/after-rotate")
    time.sleep(0.1)
    check(os.path.exists(log) and "/after-rotate" in open(log).read(), "SIGUSR1 reopens the access log")
    check("/hello" in open(log + ".1").read(), "the rotated log kept the earlier line")
    stop(p)



def wait_lines(path, n, timeout=5.0):
    """The lines of `path` once it has n of them (the log writers write within ~100 ms), or at the timeout."""
    deadline = time.time() + timeout
    while True:
        text = ""
        if os.path.exists(path):
            with open(path) as f:
                text = f.read()
        if text.count("\n") >= n or time.time() > deadline:
            return text.splitlines()
        time.sleep(0.05)


# The app's access_log middleware (its writer made in the process that loads the app, before the workers
# are forked) logs every request of every worker, and the workers exit at TERM.
with tempfile.TemporaryDirectory() as d:
    mwlog = os.path.join(d, "mw.log")
    p, url = start("--listen", "127.0.0.1:0", "--workers", "2", "--app-arg", "access-log=" + mwlog)
    n = 40
    answered = sum(get(url, "/w%d" % i).endswith(b"hello") for i in range(n))
    got = wait_lines(mwlog, n)
    check(answered == n and len(got) == n and all(any(" /w%d " % i in l for l in got) for i in range(n)),
          "--workers 2: the app's access_log middleware has one line per request (%d of %d)" % (len(got), n))
    t0 = time.time()
    rc = stop(p, wait=10)
    check(rc == 0 and time.time() - t0 < 5, "--workers 2 with access_log: SIGTERM exits 0 within 5 s (%r)" % rc)


# SIGUSR1 reopens every log file of the process: the server's --access-log and the app's access_log
# middleware, renamed first as logrotate does; without and with workers (the master forwards the signal).
def rotation(*extra):
    label = " ".join(extra) or "single process"
    with tempfile.TemporaryDirectory() as d:
        srvlog, mwlog = os.path.join(d, "server.log"), os.path.join(d, "mw.log")
        p, url = start("--listen", "127.0.0.1:0", "--access-log", srvlog, "--app-arg", "access-log=" + mwlog, *extra)
        for i in range(4):
            get(url, "/before%d" % i)
        wait_lines(mwlog, 4)
        os.rename(srvlog, srvlog + ".1")
        os.rename(mwlog, mwlog + ".1")
        os.kill(p.pid, signal.SIGUSR1)
        time.sleep(0.5)
        for i in range(4):
            get(url, "/after%d" % i)
        for path in (srvlog, mwlog):
            new, old = wait_lines(path, 4), wait_lines(path + ".1", 4)
            name = os.path.basename(path)
            check(len(new) == 4 and all("/after" in l for l in new),
                  "%s: after SIGUSR1 the next requests are in a new %s (%d lines)" % (label, name, len(new)))
            check(len(old) == 4 and all("/before" in l for l in old),
                  "%s: the renamed %s kept the earlier lines (%d lines)" % (label, name, len(old)))
        check(stop(p, wait=10) == 0, "%s: exits 0 after the rotation" % label)


rotation()
rotation("--workers", "2")

# systemd socket activation: LISTEN_FDS=1, the socket on fd 3.
ls = socket.socket()
ls.bind(("127.0.0.1", 0))
ls.listen(16)
port = ls.getsockname()[1]
env = dict(os.environ, LISTEN_FDS="1")
r, w = os.pipe()
child = subprocess.Popen(["/bin/sh", "-c", 'LISTEN_PID=$$ exec "$0" serve --app "$1" 3<&%d' % ls.fileno(), CSGI, APP],
                         stdout=subprocess.PIPE, text=True, env=env, pass_fds=(ls.fileno(),), start_new_session=True)
line = child.stdout.readline()
check(("127.0.0.1:%d" % port) in line, "LISTEN_FDS: listens on the socket systemd passed (%s)" % line.strip())
try:
    check(get("http://127.0.0.1:%d/" % port).endswith(b"hello"), "LISTEN_FDS: serves on it")
except OSError as e:
    check(False, "LISTEN_FDS: serves on it (%s)" % e)
stop(child)
ls.close()

# --app-threads in prefork workers: each worker makes its own pool after the fork. One worker with one io
# thread: /hello is answered while two /slow requests (200 ms) are in its pool; SIGTERM exits 0.
p, url = start("--listen", "127.0.0.1:0", "--workers", "1", "--threads", "1", "--app-threads", "4")
slow = []
threads = [threading.Thread(target=lambda: slow.append(get(url, "/slow"))) for _ in range(2)]
for t in threads:
    t.start()
time.sleep(0.05)
t0 = time.time()
hello = get(url)
took = time.time() - t0
for t in threads:
    t.join()
check(hello.endswith(b"hello") and took < 0.15 and len(slow) == 2 and all(s.endswith(b"hello") for s in slow),
      "--app-threads in a worker: /hello answered in %.3f s while /slow runs in the pool" % took)
check(stop(p) == 0, "--app-threads in a worker: SIGTERM exits 0")

# IPv6 and a second listener in one server.
try:
    p, url = start("--listen", "[::1]:0")
    check(get(url).endswith(b"hello"), "listens on IPv6 [::1]")
    stop(p)
except (SystemExit, OSError) as e:
    print("skip IPv6: %s" % e)

print("%d failed" % len(failures))
sys.exit(1 if failures else 0)
