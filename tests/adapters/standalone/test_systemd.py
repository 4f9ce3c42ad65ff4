#!/usr/bin/python3
"""systemd Type=notify: `csgi serve` run as docs/deploy/systemd/csgi-http.service says (its ExecStart=, on a
socket passed as csgi-http.socket would, LISTEN_FDS), with a Python AF_UNIX datagram socket standing in for
systemd's NOTIFY_SOCKET (CI runs in a container without systemd). Checks, with --workers and without:
  * READY=1 (with a STATUS= line) comes once the server answers; RELOADING=1 with MONOTONIC_USEC= (the
    monotonic clock, as systemd 253 wants) on SIGHUP and READY=1 again after it; STOPPING=1 on SIGTERM;
    in that order, and the process exits 0;
  * WATCHDOG=1 pings at about half of WATCHDOG_USEC (1 s here; the unit says WatchdogSec=10);
  * STATUS= counts the requests served (summed over the workers);
  * without NOTIFY_SOCKET nothing is sent (the socket hears nothing from a server started without it).
Usage: test_systemd.py CSGI_EXE APP_SO SOURCE_DIR"""
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from fetch import fetch  # noqa: E402
from probe import check, failures, get_ok  # noqa: E402,F401

CSGI, APP, SRC = sys.argv[1], sys.argv[2], sys.argv[3]
UNIT = os.path.join(SRC, "docs/deploy/systemd/csgi-http.service")


def unit_settings(path):
    out = {}
    for line in open(path):
        line = line.strip()
        if line and not line.startswith(("#", "[")) and "=" in line:
            k, v = line.split("=", 1)
            out[k] = v
    return out


def get(port, path="/hello"):
    return fetch(port, path, timeout=5)


class Notify:
    """The stand-in for systemd's notify socket: every datagram, with the time it came."""

    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(path)
        self.messages = []  # (time, {field: value})

    def collect(self, until, stop=lambda m: False):
        """Reads datagrams until `until` (a time) or until stop(message) is true; returns that message."""
        while time.time() < until:
            self.sock.settimeout(max(0.01, until - time.time()))
            try:
                data = self.sock.recv(4096).decode()
            except socket.timeout:
                break
            fields = dict(l.split("=", 1) for l in data.split("\n") if "=" in l)
            self.messages.append((time.time(), fields))
            if stop(fields):
                return fields
        return None

    def first(self, key, start=0):
        for i, (_, m) in enumerate(self.messages[start:], start):
            if key in m:
                return i
        return -1


settings = unit_settings(UNIT)
check(settings.get("Type") == "notify", "the unit is Type=notify")
check(settings.get("NotifyAccess") == "all", "NotifyAccess=all (the new master of an upgrade sends from its pid)")
check(settings.get("WatchdogSec", "0") not in ("", "0"), "the unit sets WatchdogSec (%s)" % settings.get("WatchdogSec"))
check("Requires" in open(UNIT).read() and "csgi-http.socket" in open(UNIT).read(), "the unit is socket-activated")
exec_start = settings["ExecStart"]


def run(tmp, workers):
    label = "--workers %s" % workers if workers else "single process"
    args = shlex.split(exec_start.replace("@CSGI@", CSGI).replace("@APP@", APP).replace("@LOGS@", tmp))
    if not workers:
        i = args.index("--workers")
        del args[i:i + 2]
    notify_path = os.path.join(tmp, "notify-%s" % workers)
    n = Notify(notify_path)
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen(64)
    port = ls.getsockname()[1]
    env = dict(os.environ, LISTEN_FDS="1", NOTIFY_SOCKET=notify_path, WATCHDOG_USEC="1000000")
    # systemd sets LISTEN_PID and WATCHDOG_PID to the main pid: the shell's, which exec keeps.
    script = 'LISTEN_PID=$$ WATCHDOG_PID=$$ exec "$@" 3<&%d' % ls.fileno()
    p = subprocess.Popen(["/bin/sh", "-c", script, "sh"] + args, env=env, pass_fds=(ls.fileno(),),
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    ls.close()
    try:
        ready = n.collect(time.time() + 15, lambda m: m.get("READY") == "1")
        check(ready is not None, "%s: READY=1" % label)
        if ready is None:
            return
        check("STATUS" in ready, "%s: READY=1 comes with a STATUS line (%r)" % (label, ready.get("STATUS")))
        body = get(port)
        check(body.endswith(b"hello"), "%s: it serves once READY=1 came" % label)
        for _ in range(9):
            get(port)
        start = len(n.messages)
        n.collect(time.time() + 2.6)
        pings = [t for t, m in n.messages[start:] if m.get("WATCHDOG") == "1"]
        gaps = [b - a for a, b in zip(pings, pings[1:])]
        check(len(pings) >= 4, "%s: WATCHDOG=1 every half WATCHDOG_USEC: %d pings in 2.6 s" % (label, len(pings)))
        check(all(0.3 < g < 0.8 for g in gaps), "%s: ~0.5 s apart (%s)" % (label, ["%.2f" % g for g in gaps]))
        statuses = [m["STATUS"] for _, m in n.messages if "STATUS" in m]
        counted = [int(x) for s in statuses for x in re.findall(r"(\d+) requests served", s)]
        check(counted and max(counted) >= 10, "%s: STATUS counts the requests served (%s)" % (label, statuses[-1:]))
        os.killpg(p.pid, 0)
        p.send_signal(signal.SIGHUP)
        before = time.clock_gettime(time.CLOCK_MONOTONIC)
        reloading = n.collect(time.time() + 10, lambda m: m.get("RELOADING") == "1")
        check(reloading is not None, "%s: RELOADING=1 on SIGHUP" % label)
        if reloading:
            usec = int(reloading.get("MONOTONIC_USEC", "0"))
            check(abs(usec / 1e6 - before) < 2, "%s: MONOTONIC_USEC is CLOCK_MONOTONIC now (%d)" % (label, usec))
        again = n.collect(time.time() + 10, lambda m: m.get("READY") == "1")
        check(again is not None, "%s: READY=1 after the reload" % label)
        check(get(port).endswith(b"hello"), "%s: serving after the reload" % label)
        p.send_signal(signal.SIGTERM)
        stopping = n.collect(time.time() + 10, lambda m: m.get("STOPPING") == "1")
        check(stopping is not None, "%s: STOPPING=1 on SIGTERM" % label)
        check(p.wait(timeout=30) == 0, "%s: exits 0" % label)
        order = [n.first("READY"), n.first("RELOADING"), n.first("READY", n.first("RELOADING") + 1), n.first("STOPPING")]
        check(all(i >= 0 for i in order) and order == sorted(order),
              "%s: READY, RELOADING, READY, STOPPING in that order (%s)" % (label, order))
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
        err = p.stderr.read()
        if err:
            print(err)
        n.sock.close()


with tempfile.TemporaryDirectory() as tmp:
    run(tmp, 2)
    run(tmp, 0)
    # Without NOTIFY_SOCKET: nothing is sent anywhere (the stand-in socket, named nowhere, hears nothing).
    quiet = Notify(os.path.join(tmp, "quiet"))
    p = subprocess.Popen([CSGI, "serve", "--app", APP, "--workers", "1", "--listen", "127.0.0.1:0"],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, start_new_session=True,
                         env={k: v for k, v in os.environ.items() if k != "NOTIFY_SOCKET"})
    line = p.stdout.readline()
    check("listening on" in line, "without NOTIFY_SOCKET it starts as before")
    check(quiet.collect(time.time() + 1) is None and not quiet.messages, "and sends nothing")
    p.send_signal(signal.SIGTERM)
    check(p.wait(timeout=30) == 0, "and stops as before")

print("%d failures" % len(failures))
sys.exit(1 if failures else 0)
