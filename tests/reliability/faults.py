#!/usr/bin/env python3
"""Fault tests for `csgi serve` (docs/reliability.md §4). Each prints one table row and must lose nothing:
  crash     app faults (SIGSEGV, SIGFPE, stack overflow) on some requests under --workers 2: each is
            contained to its own request (500), logged, the worker replaced; every other request succeeds
  sigterm   SIGTERM while wrk -c200 runs and 50 slow requests are in flight: all 50 complete (200)
  sighup    SIGHUP (graceful worker restart) under load: 0 failed requests
  diskfull  the access log's disk fills up: requests are still served, the error is reported once
  fds       out of file descriptors: accept pauses, then recovers once connections close

  faults.py --csgi build/adapters/cli/csgi --app build/tests/reliability/libcanary_app.so [--only NAME]
            [--seconds 4] [--threads N] [--crashes N] [--hup-every S] [--markdown FILE]
"""
import argparse
import concurrent.futures as cf
import http.client
import os
import resource
import signal
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import netlab  # noqa: E402


def get(port, path, timeout=10, sent=None):
    """The status of GET `path` (None on a failure); `sent` (a semaphore) is released once the request is out."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request("GET", path)
        if sent:
            sent.release()
        r = c.getresponse()
        r.read()
        return r.status
    except (OSError, http.client.HTTPException):
        return None
    finally:
        c.close()


def sleeping(port):
    """How many /sleep requests the canary app has begun and not answered (-1 on a failure)."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        c.request("GET", "/sleeping")
        return int(c.getresponse().read())
    except (OSError, ValueError, http.client.HTTPException):
        return -1
    finally:
        c.close()


class Server:
    def __init__(self, args, work, extra=(), preexec=None):
        self.port = netlab.free_port()
        self.log = os.path.join(work, f"csgi-{self.port}.log")
        argv = [args.csgi, "serve", "--app", args.app, "--listen", f"127.0.0.1:{self.port}"] + list(extra)
        self.p = subprocess.Popen(argv, stdout=open(self.log, "ab"), stderr=subprocess.STDOUT, start_new_session=True,
                                  preexec_fn=preexec)
        netlab.wait_port("127.0.0.1", self.port)

    def url(self, path="/canary"):
        return f"http://127.0.0.1:{self.port}{path}"

    def signal(self, sig):
        os.kill(self.p.pid, sig)

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            try:
                self.p.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.p.pid, signal.SIGKILL)
                self.p.wait()
        return self.p.returncode

    def text(self):
        return open(self.log, errors="replace").read()


def t_crash(args, work):
    threads = args.threads
    s = Server(args, work, ["--workers", "2", "--threads", str(threads)])
    try:
        result = {}
        t = threading.Thread(target=lambda: result.update(netlab.wrk(s.url(), args.seconds, connections=10)))
        t.start()
        time.sleep(args.seconds / 8)
        # Faults of every kind, spread over the run: a raised SIGSEGV, a null write, a stack overflow
        # (the handler's alternate stack), a division by zero (SIGFPE).
        kinds = ["raise", "null", "stack", "fpe"] * (args.crashes // 4 + 1)
        crashes = []
        for k in kinds[:args.crashes]:
            crashes.append(get(s.port, "/crash?" + k))
            time.sleep(args.seconds * 0.6 / args.crashes)
        t.join()
        after = [get(s.port, "/canary") for _ in range(20)]
        lost = result["errors"] + result["non2xx"] + sum(1 for x in after if x != 200)
        alive = s.p.poll() is None
        log = s.text()
        contained = log.count("in the app on io thread")
        named = sum(1 for line in log.splitlines() if "in the app on io thread" in line and "GET /crash?" in line)
        # Each crash is one failed request: 500 when nothing had been sent, else a closed connection.
        crash_ok = all(x in (500, None) for x in crashes)
        note = (f"{len(crashes)} crashing requests answered {sorted(set(map(str, crashes)))}; {contained} faults contained "
                f"and logged with the request ({named}); master alive: {alive}")
        ok = alive and lost == 0 and crash_ok and contained == len(crashes) and named == len(crashes)
        return (f"app faults on {len(crashes)} requests (SIGSEGV, SIGFPE, stack overflow), --workers 2 --threads {threads}, "
                f"wrk -c10", result["requests"], lost, ok, note)
    finally:
        s.stop()


def t_sigterm(args, work):
    s = Server(args, work, ["--threads", "2", "--graceful-timeout", "10"])
    result = {}
    t = threading.Thread(target=lambda: result.update(netlab.wrk(s.url(), args.seconds, connections=200)))
    t.start()
    time.sleep(1)
    pool = cf.ThreadPoolExecutor(50)
    sent = threading.Semaphore(0)
    slow = [pool.submit(get, s.port, "/sleep?ms=2000", 30, sent) for _ in range(50)]
    # The stop comes once the app has begun every slow request (a loaded machine takes more than a fixed
    # moment to start 50 client threads, and the server to accept and read them beside wrk's 200).
    deadline = time.time() + 20
    for _ in range(50):
        sent.acquire(timeout=max(0.0, deadline - time.time()))
    while time.time() < deadline and sleeping(s.port) < 50:
        time.sleep(0.05)
    s.signal(signal.SIGTERM)
    statuses = [f.result() for f in slow]
    rc = s.p.wait(30)
    t.join()
    lost = sum(1 for x in statuses if x != 200)
    note = f"exit status {rc}; wrk after the stop: {result.get('errors', 0)} socket errors (refused new connections)"
    return ("SIGTERM under wrk -c200 with 50 slow requests in flight", 50, lost, lost == 0 and rc == 0, note)


def t_sighup(args, work):
    s = Server(args, work, ["--workers", "2"])
    try:
        result = {}
        t = threading.Thread(target=lambda: result.update(
            netlab.wrk(s.url(), args.seconds + 2, connections=50, threads=2 if args.hup_every else 1)))
        t.start()
        hups = 0
        if args.hup_every:
            # A storm of restarts: one every HUP_EVERY seconds for the whole run.
            time.sleep(0.5)
            end = time.time() + args.seconds
            while time.time() < end:
                s.signal(signal.SIGHUP)
                hups += 1
                time.sleep(args.hup_every)
        else:
            for _ in range(3):
                time.sleep(args.seconds / 4)
                s.signal(signal.SIGHUP)
                hups += 1
        t.join()
        lost = result["errors"] + result["non2xx"]
        return (f"{hups} x SIGHUP (graceful worker restart) under wrk -c50", result["requests"], lost, lost == 0,
                result["raw"].split("Socket errors:")[1].split("\n")[0].strip() if "Socket errors:" in result["raw"] else "")
    finally:
        s.stop()


def t_diskfull(args, work):
    mnt = os.path.join(work, "tiny")
    os.makedirs(mnt)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", mnt]).returncode != 0:
        return ("access log disk full", 0, 0, True, "SKIPPED: cannot mount a tmpfs here")
    try:
        s = Server(args, work, ["--access-log", os.path.join(mnt, "access.log")])
        try:
            statuses = [get(s.port, "/canary?" + "x" * 200) for _ in range(2000)]
            lost = sum(1 for x in statuses if x != 200)
            log = s.text()
            reports = sum(1 for line in log.splitlines() if "No space left" in line or "ENOSPC" in line or "disk full" in line.lower())
            ok = lost == 0 and reports >= 1 and reports <= 3 and s.p.poll() is None
            return ("access log on a full 64 KiB disk, 2000 requests", 2000, lost, ok, f"error lines in the server log: {reports}")
        finally:
            s.stop()
    finally:
        subprocess.run(["umount", "-l", mnt])


def t_fds(args, work):
    def limit():
        resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
    s = Server(args, work, ["--threads", "1"], preexec=limit)
    try:
        held = []
        for _ in range(120):
            try:
                held.append(socket.create_connection(("127.0.0.1", s.port), timeout=1))
            except OSError:
                break
        during = get(s.port, "/canary", timeout=2)
        for c in held:
            c.close()
        time.sleep(1.5)
        after = [get(s.port, "/canary") for _ in range(20)]
        lost = sum(1 for x in after if x != 200)
        ok = lost == 0 and s.p.poll() is None
        return ("out of fds (RLIMIT_NOFILE 64, 120 idle connections)", 20, lost, ok,
                f"request while exhausted: {during}; server alive: {s.p.poll() is None}")
    finally:
        s.stop()


TESTS = {"crash": t_crash, "sigterm": t_sigterm, "sighup": t_sighup, "diskfull": t_diskfull, "fds": t_fds}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--csgi", required=True)
    ap.add_argument("--app", required=True)
    ap.add_argument("--only", help="comma-separated names")
    ap.add_argument("--seconds", type=int, default=4)
    ap.add_argument("--threads", type=int, default=1, help="io threads per worker in the crash check")
    ap.add_argument("--hup-every", type=float, default=0, help="sighup check: one SIGHUP every N seconds instead of 3")
    ap.add_argument("--crashes", type=int, default=8, help="crashing requests in the crash check")
    ap.add_argument("--markdown")
    args = ap.parse_args()
    args.csgi, args.app = os.path.abspath(args.csgi), os.path.abspath(args.app)
    work = netlab.tempdir()
    rows, failed = [], 0
    for name, fn in TESTS.items():
        if args.only and name not in args.only.split(","):
            continue
        try:
            row = fn(args, work)
        except Exception as e:  # a harness error is a failure of that row, not of the whole run
            row = (name, 0, "?", False, f"error: {e}")
        rows.append(row)
        failed += not row[3]
        print(f"{'pass' if row[3] else 'FAIL'}  {row[0]}: requests {row[1]}, lost {row[2]}  {row[4]}", flush=True)
    table = "| fault | requests | lost | result | note |\n|---|---|---|---|---|\n" + "".join(
        f"| {r[0]} | {r[1]} | {r[2]} | {'pass' if r[3] else 'FAIL'} | {r[4]} |\n" for r in rows)
    if args.markdown:
        open(args.markdown, "w").write(table)
    print(f"{len(rows) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
